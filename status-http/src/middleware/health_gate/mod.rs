//! Shed requests while the system is in OUTAGE.
//!
//! # Example
//!
//! ```
//! use axum::{routing::get, Router};
//! use status_core::Registry;
//! use status_http::middleware::HealthGateLayer;
//!
//! let registry = Registry::new();
//! let app: Router = Router::new()
//!     .route("/orders", get(|| async { "orders" }))
//!     .layer(HealthGateLayer::new(&registry));
//! ```

mod layer;

use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::response::Response;
use status_core::{CheckStatus, Registry};
use tower::Service;

pub use self::layer::HealthGateLayer;
use super::future::ResponseFuture;
use super::unavailable;

/// Answers 503 with `Retry-After` while the system is in OUTAGE, instead of calling the
/// inner service; see [`HealthGateLayer`].
///
/// Reading the system status is one atomic load ([`Registry::condition`]): no check runs,
/// no report is read, no lock is taken on the request path.
#[derive(Debug, Clone)]
pub struct HealthGate<S> {
    inner: S,
    registry: Registry,
    fail_open: bool,
    explain: bool,
    retry_after: Duration,
}

impl<S> HealthGate<S> {
    /// Gates `inner` on `registry`'s system status.
    pub fn new(inner: S, registry: &Registry) -> Self {
        HealthGateLayer::new(registry).wrap(inner)
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, B> Service<Request<B>> for HealthGate<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        if self.registry.condition() != CheckStatus::Outage {
            return ResponseFuture::inner(self.inner.call(request), None);
        }
        if self.fail_open {
            let mark = HeaderValue::from_static("OUTAGE");
            return ResponseFuture::inner(self.inner.call(request), Some(mark));
        }
        let message = if self.explain {
            let causes: Vec<String> = self.registry.report().culprit_sentences().collect();
            format!(
                "service unavailable: system is OUTAGE ({})",
                causes.join(", ")
            )
        } else {
            "service unavailable".to_owned()
        };
        ResponseFuture::rejected(unavailable(message, self.retry_after))
    }
}
