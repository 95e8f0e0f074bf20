//! `/status/page` as one hand-written service, as the v2 documents are.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::{
    ACCEPT_LANGUAGE, CONTENT_LANGUAGE, CONTENT_SECURITY_POLICY, VARY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::Response;

use super::i18n;
use super::page::page;
use super::StatusPageState;
use crate::dashboard::CSP;
use crate::render::{Body, Conditional};

/// The page's content type.
pub(super) const HTML: &str = "text/html; charset=utf-8";

/// `/status/page` as one hand-written service, as the v2 documents are: a request without a
/// query, while what is published holds and its page in the request's language is made, is
/// answered on the spot from that page's bytes (no extractor, no boxed handler future; the
/// page is what a crowd refreshes during an incident). Any other goes to [`page`], which
/// checks the query, publishes anew and makes the page.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    state: Arc<StatusPageState>,
}

impl Page {
    pub(crate) fn new(state: Arc<StatusPageState>) -> Self {
        Self { state }
    }

    /// The answer made of what is published, if that holds and has the page.
    fn made(&self, request: &axum::http::Request<axum::body::Body>) -> Option<Response> {
        if request.uri().query().is_some() {
            return None;
        }
        let accept = request.headers().get(ACCEPT_LANGUAGE);
        let l = i18n::negotiate(None, accept.and_then(|v| v.to_str().ok()));
        let body = self.state.published_now()?.page(l.key())?;
        let conditional = Conditional::from_headers(request.headers());
        Some(html_response(&body, l.tag(), &conditional))
    }
}

impl tower::Service<axum::http::Request<axum::body::Body>> for Page {
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::Either<
        std::future::Ready<Result<Response, Infallible>>,
        futures::future::BoxFuture<'static, Result<Response, Infallible>>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::http::Request<axum::body::Body>) -> Self::Future {
        if let Some(response) = self.made(&request) {
            return futures::future::Either::Left(std::future::ready(Ok(response)));
        }
        let state = Arc::clone(&self.state);
        futures::future::Either::Right(Box::pin(async move {
            Ok(axum::handler::Handler::call(page, request, state).await)
        }))
    }
}

/// The request's `Accept-Language`, alone: extracting the whole `HeaderMap` would copy it.
pub(crate) struct AcceptLanguage(pub(super) Option<HeaderValue>);

impl<S: Send + Sync> FromRequestParts<S> for AcceptLanguage {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.headers.get(ACCEPT_LANGUAGE).cloned()))
    }
}

pub(super) fn html_response(
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
