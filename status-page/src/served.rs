//! `/status/page` as one hand-written service, as the v2 documents are.

use std::convert::Infallible;
use std::sync::Arc;

use axum::http::header::ACCEPT_LANGUAGE;
use axum::response::Response;

use super::html::html_response;
use super::i18n;
use super::page::page;
use super::StatusPageState;
use crate::render::Conditional;

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
