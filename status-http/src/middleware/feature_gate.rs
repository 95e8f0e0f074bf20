//! Put a route behind a feature.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), status_core::Error> {
//! use axum::{routing::post, Router};
//! use status_core::{check, CheckStatus, Dependency, Feature, Registry};
//! use status_http::middleware::FeatureGateLayer;
//!
//! let registry = Registry::new();
//! registry.add(Dependency::builder("payments-api", check::tiered(|| async { CheckStatus::Ok })).build()?)?;
//! let checkout = registry.add_feature(
//!     Feature::builder("checkout").requires("payments-api", CheckStatus::Minor).build()?,
//! )?;
//! let app: Router = Router::new()
//!     .route("/checkout", post(|| async { "paid" }))
//!     .layer(FeatureGateLayer::new(checkout));
//! # Ok(())
//! # }
//! ```

use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use status_core::FeatureHandle;
use tower::{Layer, Service};

use super::future::ResponseFuture;
use super::{unavailable, DEFAULT_RETRY_AFTER};

/// Answers 503 with `Retry-After` while a feature is off, instead of calling the inner
/// service. Checking costs one atomic load.
#[derive(Debug, Clone)]
pub struct FeatureGate<S> {
    inner: S,
    feature: FeatureHandle,
    explain: bool,
    retry_after: Duration,
}

impl<S> FeatureGate<S> {
    /// Gates `inner` on `feature`.
    pub fn new(inner: S, feature: FeatureHandle) -> Self {
        FeatureGateLayer::new(feature).layer(inner)
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

impl<S, B> Service<Request<B>> for FeatureGate<S>
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
        if self.feature.is_enabled() {
            return ResponseFuture::inner(self.inner.call(request), None);
        }
        let state = self.feature.state();
        let message = if self.explain {
            format!("feature {} is disabled: {}", state.name, state.reason)
        } else {
            format!("feature {} is unavailable", state.name)
        };
        ResponseFuture::rejected(unavailable(message, self.retry_after))
    }
}

/// Applies [`FeatureGate`].
#[derive(Debug, Clone)]
pub struct FeatureGateLayer {
    feature: FeatureHandle,
    explain: bool,
    retry_after: Duration,
}

impl FeatureGateLayer {
    /// Gates on `feature`; `Retry-After: 10` by default.
    #[must_use]
    pub fn new(feature: FeatureHandle) -> Self {
        Self {
            feature,
            explain: false,
            retry_after: DEFAULT_RETRY_AFTER,
        }
    }

    /// Says why the feature is off in a rejection's body (`feature checkout is disabled:
    /// payments-api is MAJOR, needs MINOR or better`). Off by default: a gated route answers
    /// the application's callers, and its body names the feature (`feature checkout is
    /// unavailable`), never the dependencies, whose names are the operators'.
    #[must_use]
    pub fn explain(mut self, explain: bool) -> Self {
        self.explain = explain;
        self
    }

    /// The `Retry-After` of a rejection (whole seconds, at least 1).
    #[must_use]
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }
}

impl<S> Layer<S> for FeatureGateLayer {
    type Service = FeatureGate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FeatureGate {
            inner,
            feature: self.feature.clone(),
            explain: self.explain,
            retry_after: self.retry_after,
        }
    }
}
