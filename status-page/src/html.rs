//! How the page is answered: HTML in the request's language, with the page's security headers.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::header::{
    ACCEPT_LANGUAGE, CONTENT_LANGUAGE, CONTENT_SECURITY_POLICY, VARY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::Response;
use status_http_core::CSP;

use crate::render::{Body, Conditional};

/// The page's content type.
pub(crate) const HTML: &str = "text/html; charset=utf-8";

/// The request's `Accept-Language`, alone: extracting the whole `HeaderMap` would copy it.
pub(crate) struct AcceptLanguage(pub(crate) Option<HeaderValue>);

impl<S: Send + Sync> FromRequestParts<S> for AcceptLanguage {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.headers.get(ACCEPT_LANGUAGE).cloned()))
    }
}

/// The page `body` in language `lang`, as `conditional` asks: 304 when it holds it.
pub(crate) fn html_response(
    body: &Body,
    lang: &'static str,
    conditional: &Conditional,
) -> Response {
    let mut response = body.respond(axum::http::StatusCode::OK, conditional);
    let headers = response.headers_mut();
    headers.insert(CONTENT_LANGUAGE, HeaderValue::from_static(lang));
    // The language follows the request's: caches keep one answer per language (and per
    // coding, which the body says).
    let vary = if headers.contains_key(VARY) {
        "accept-encoding, accept-language"
    } else {
        "accept-language"
    };
    headers.insert(VARY, HeaderValue::from_static(vary));
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
