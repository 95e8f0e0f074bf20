//! The traffic mechanisms of `status-traffic` over HTTP: their refusals as answers (marked as
//! overload, never counted as failure), and each mechanism's dashboard panel and metrics, read
//! from the mechanism when shown or scraped.
//!
//! | module | what |
//! |---|---|
//! | here | [`overloaded`] and [`shedding`]: refusals as 429/503 answers; [`server_errors`]: how a response counts among failures |
//! | `shed_panel`, `shed_metrics` | the shedding layer's panel (feature `dashboard`) and `status_shed_*` metrics (feature `metrics`) |
//! | `pool_panel`, `pool_metrics` | a node pool's panel and `status_pool_*` metrics |
//! | `cull_panel`, `cull_metrics` | the culler's panel and `status_cull_*` metrics |

#[cfg(any(feature = "dashboard", feature = "metrics"))]
mod cull;
#[cfg(any(feature = "dashboard", feature = "metrics"))]
mod pool;
#[cfg(any(feature = "dashboard", feature = "metrics"))]
mod shed;

#[cfg(feature = "metrics")]
pub use self::cull::cull_metrics;
#[cfg(feature = "dashboard")]
pub use self::cull::cull_panel;
#[cfg(feature = "metrics")]
pub use self::pool::pool_metrics;
#[cfg(feature = "dashboard")]
pub use self::pool::pool_panel;
#[cfg(feature = "metrics")]
pub use self::shed::shed_metrics;
#[cfg(feature = "dashboard")]
pub use self::shed::shed_panel;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use pin_project_lite::pin_project;
use status_traffic::count::Counted;
use status_traffic::overload::{is_overload, Overload};
use status_traffic::pool::TimedOut;
use status_traffic::shed::{QueueFull, ShedLayer};
use tower::layer::util::Stack;
use tower::BoxError;
use tower::{Layer, Service};

use crate::ApiError;

/// How long a refused client is told to wait: 1 s.
const RETRY: Duration = Duration::from_secs(1);

/// A refusal of the shedding layer or of a node pool as an answer: a full queue 429, a queue
/// timeout, a deadline or a pool without capacity 503, each with `Retry-After`, a JSON
/// `{"error": …}` and the [`Overload`] extension (so that [`server_errors`] never counts it as
/// a failure of the instance); a pool's [`TimedOut`] 504, which is a node's failure and
/// carries no such mark; any other error 500.
///
/// For axum's `HandleErrorLayer`:
///
/// ```
/// use axum::error_handling::HandleErrorLayer;
/// use axum::routing::get;
/// use status_traffic::limit::{Gradient2, Limiter};
/// use status_traffic::shed::ShedLayer;
/// use tower::ServiceBuilder;
///
/// let shed = ShedLayer::new(Limiter::new(Gradient2::default()));
/// let app: axum::Router = axum::Router::new().route(
///     "/work",
///     get(|| async { "done" }).layer(
///         ServiceBuilder::new()
///             .layer(HandleErrorLayer::new(status_http::traffic::overloaded))
///             .layer(shed),
///     ),
/// );
/// ```
pub async fn overloaded(error: BoxError) -> Response {
    answer(&error)
}

/// [`overloaded`], without the `async`.
fn answer(error: &BoxError) -> Response {
    if !is_overload(&**error) {
        // A node that did not answer in time failed: a gateway timeout, not overload.
        let status = if error.is::<TimedOut>() {
            StatusCode::GATEWAY_TIMEOUT
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        return ApiError::new(status, error.to_string()).into_response();
    }
    let status = if error.is::<QueueFull>() {
        StatusCode::TOO_MANY_REQUESTS
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut response = ApiError::new(status, error.to_string()).into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(RETRY.as_secs()));
    response.extensions_mut().insert(Overload);
    response
}

/// A shedding layer for an axum route, its refusals answered as [`overloaded`] does, in one
/// line and without `HandleErrorLayer`'s per-request clone and allocation.
///
/// ```
/// use axum::routing::get;
/// use status_traffic::limit::{Gradient2, Limiter};
/// use status_traffic::shed::ShedLayer;
///
/// let shed = ShedLayer::new(Limiter::new(Gradient2::default()));
/// let app: axum::Router = axum::Router::new()
///     .route("/work", get(|| async { "done" }).layer(status_http::traffic::shedding(shed)));
/// ```
pub fn shedding(layer: ShedLayer<Request>) -> Stack<ShedLayer<Request>, OverloadedLayer> {
    Stack::new(layer, OverloadedLayer)
}

/// Answers the errors of the service it wraps (a [`Shed`](status_traffic::shed::Shed)) as
/// [`overloaded`] does; see [`shedding`].
#[derive(Debug, Clone, Copy, Default)]
pub struct OverloadedLayer;

impl<S> Layer<S> for OverloadedLayer {
    type Service = Overloaded<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Overloaded {
            inner,
            failed: None,
        }
    }
}

/// What [`OverloadedLayer`] makes of a service.
#[derive(Debug)]
pub struct Overloaded<S> {
    inner: S,
    /// The inner service's readiness failed: the next call answers it.
    failed: Option<BoxError>,
}

impl<S: Clone> Clone for Overloaded<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            failed: None,
        }
    }
}

impl<S> Service<Request> for Overloaded<S>
where
    S: Service<Request, Response = Response, Error = BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = OverloadedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if let Err(error) = ready!(self.inner.poll_ready(cx)) {
            self.failed = Some(error);
        }
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.failed.take() {
            Some(error) => OverloadedFuture {
                inner: None,
                failed: Some(error),
            },
            None => OverloadedFuture {
                inner: Some(self.inner.call(request)),
                failed: None,
            },
        }
    }
}

pin_project! {
    /// The response future of [`Overloaded`].
    #[derive(Debug)]
    pub struct OverloadedFuture<F> {
        #[pin]
        inner: Option<F>,
        failed: Option<BoxError>,
    }
}

impl<F> Future for OverloadedFuture<F>
where
    F: Future<Output = Result<Response, BoxError>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Some(error) = this.failed.take() {
            return Poll::Ready(Ok(answer(&error)));
        }
        let inner = this.inner.as_pin_mut().expect("polled after completion");
        Poll::Ready(Ok(ready!(inner.poll(cx)).unwrap_or_else(|e| answer(&e))))
    }
}

/// How a response counts among failures of live traffic: a 5xx or an error is a failure,
/// anything else a success, and a refusal of an overload mechanism (an answer of
/// [`overloaded`], which carries the [`Overload`] extension, or a `BoxError` that
/// [`is_overload`]) is not counted at all: a burst is not the instance failing, whether the
/// counter sits inside the shedding layer or outside it. For
/// [`CountLayer`](status_traffic::count::CountLayer) on axum routes.
#[must_use]
pub fn server_errors<E: 'static>(result: &Result<Response, E>) -> Counted {
    match result {
        Ok(response) if response.extensions().get::<Overload>().is_some() => Counted::Skipped,
        Ok(response) => response.status().is_server_error().into(),
        Err(error) => match (error as &dyn std::any::Any).downcast_ref::<BoxError>() {
            Some(error) if is_overload(&**error) => Counted::Skipped,
            _ => Counted::Failure,
        },
    }
}

#[cfg(test)]
mod tests {
    use status_traffic::pool::NoCapacity;
    use status_traffic::shed::{Elapsed, QueueTimeout};

    use super::*;

    #[tokio::test]
    async fn refusals_are_never_failures_and_real_5xx_are() {
        for error in [
            BoxError::from(QueueFull),
            BoxError::from(QueueTimeout),
            BoxError::from(Elapsed),
            BoxError::from(NoCapacity),
        ] {
            let answer = overloaded(error).await;
            assert!(answer.status().is_client_error() || answer.status().is_server_error());
            assert_eq!(server_errors(&Ok::<_, BoxError>(answer)), Counted::Skipped);
        }
        assert_eq!(
            server_errors(&Err::<Response, _>(BoxError::from(QueueFull))),
            Counted::Skipped
        );
        let boom = overloaded(BoxError::from("boom")).await;
        assert_eq!(server_errors(&Ok::<_, BoxError>(boom)), Counted::Failure);
        let handler_503 = StatusCode::SERVICE_UNAVAILABLE.into_response();
        assert_eq!(
            server_errors(&Ok::<_, Infallible>(handler_503)),
            Counted::Failure,
            "a 503 of the handler itself is a failure"
        );
        assert_eq!(
            server_errors(&Ok::<_, Infallible>(StatusCode::OK.into_response())),
            Counted::Success
        );
        assert_eq!(
            server_errors(&Err::<Response, _>(BoxError::from("reset"))),
            Counted::Failure
        );
    }

    #[tokio::test]
    async fn every_refusal_has_its_code_and_retry_after() {
        for (error, code) in [
            (BoxError::from(QueueFull), 429),
            (BoxError::from(QueueTimeout), 503),
            (BoxError::from(Elapsed), 503),
            (BoxError::from(NoCapacity), 503),
        ] {
            let response = overloaded(error).await;
            assert_eq!(response.status().as_u16(), code);
            assert_eq!(response.headers()[RETRY_AFTER], "1");
        }
        let late = overloaded(BoxError::from(TimedOut)).await;
        assert_eq!(late.status(), StatusCode::GATEWAY_TIMEOUT);
        assert!(late.extensions().get::<Overload>().is_none());
        let other = overloaded(BoxError::from("boom")).await;
        assert_eq!(other.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!other.headers().contains_key(RETRY_AFTER));
    }
}
