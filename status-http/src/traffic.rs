//! The traffic mechanisms of `status-traffic` over HTTP: their refusals as answers, their
//! state as metrics.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use pin_project_lite::pin_project;
use tower::layer::util::Stack;
use tower::{Layer, Service};

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use status_traffic::count::Counted;
use status_traffic::cull::CullerHandle;
use status_traffic::overload::{is_overload, Overload};
use status_traffic::pool::{NodeState, Pool, TimedOut};
use status_traffic::shed::{QueueFull, ShedLayer, ShedSample, ShedState};
use tower::BoxError;

use crate::panel::{Chart, Panel, PanelView};
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

/// The dashboard's panel of a shedding layer titled `title`: its limit, in-flight and queued
/// requests and refusals by reason, and charts of the last five minutes of its
/// [`history`](ShedLayer::history) (kept by [`ShedLayer::report_to`]). Pass it to
/// [`Routes::panel`](crate::Routes::panel).
pub fn shed_panel<R: 'static>(title: impl Into<String>, layer: &ShedLayer<R>) -> Panel {
    let layer = layer.clone();
    Panel::new(title, move || {
        shed_view(&layer.state(), &layer.history(), layer.elapsed())
    })
}

/// How far back the shedding panel's charts reach.
const PANEL_WINDOW: Duration = Duration::from_secs(300);

fn shed_view(state: &ShedState, history: &[ShedSample], now: Duration) -> PanelView {
    let age = |s: &ShedSample| now.saturating_sub(s.at);
    let recent: Vec<&ShedSample> = history.iter().filter(|s| age(s) <= PANEL_WINDOW).collect();
    let line = |pick: fn(&ShedSample) -> usize| -> Vec<(Duration, f64)> {
        recent.iter().map(|s| (age(s), pick(s) as f64)).collect()
    };
    // Refusals per second over each sample's period.
    let refused = recent
        .iter()
        .map(|s| (age(s), s.refused as f64 / s.period.as_secs_f64().max(1e-3)))
        .collect();
    PanelView::new()
        .fact("Limit", state.limit.to_string())
        .fact("In flight", state.in_flight.to_string())
        .fact("Queued", state.queued.to_string())
        .fact("Refused, queue full", state.queue_full.to_string())
        .fact("Refused, waited too long", state.queue_timeout.to_string())
        .fact("Cut off at the deadline", state.elapsed.to_string())
        .chart(
            Chart::new("Concurrency", PANEL_WINDOW)
                .series("limit", line(|s| s.limit))
                .series("in flight", line(|s| s.in_flight))
                .series("queued", line(|s| s.queued)),
        )
        .chart(Chart::new("Refused per second", PANEL_WINDOW).series("refused", refused))
}

/// Registers a shedding layer's metrics under the label `layer = name`, read when scraped:
/// `status_shed_limit`, `status_shed_inflight`, `status_shed_queued` and
/// `status_shed_rejected_total{reason}` (`queue_full`, `queue_timeout`, `deadline`). Pass it
/// to [`Routes::register_metrics`](crate::Routes::register_metrics).
pub fn shed_metrics<R: 'static>(
    name: impl Into<String>,
    layer: &ShedLayer<R>,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static {
    let name = name.into();
    let state: Read = {
        let layer = layer.clone();
        Arc::new(move || layer.state())
    };
    move |metrics| {
        let sub = metrics.sub_registry_with_label(("layer".into(), name.into()));
        let gauge = |pick: fn(&ShedState) -> usize| Live {
            state: Arc::clone(&state),
            value: Value::Gauge(pick),
        };
        sub.register(
            "status_shed_limit",
            "The shedding layer's concurrency limit",
            gauge(|s| s.limit),
        );
        sub.register(
            "status_shed_inflight",
            "Requests being processed",
            gauge(|s| s.in_flight),
        );
        sub.register(
            "status_shed_queued",
            "Requests waiting",
            gauge(|s| s.queued),
        );
        sub.register(
            "status_shed_rejected",
            "Requests refused, by reason",
            Live {
                state: Arc::clone(&state),
                value: Value::Rejected,
            },
        );
    }
}

type Read = Arc<dyn Fn() -> ShedState + Send + Sync>;

/// A counter family with a series per `reason`.
fn encode_by_reason(
    encoder: &mut MetricEncoder<'_>,
    counts: &[(&str, u64)],
) -> Result<(), std::fmt::Error> {
    for (reason, count) in counts {
        encoder
            .encode_family(&[("reason", *reason)])?
            .encode_counter::<NoLabelSet, _, u64>(count, None)?;
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Value {
    Gauge(fn(&ShedState) -> usize),
    Rejected,
}

/// A metric read from the layer's state when scraped.
struct Live {
    state: Read,
    value: Value,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

impl EncodeMetric for Live {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let state = (self.state)();
        match self.value {
            Value::Gauge(pick) => {
                encoder.encode_gauge(&i64::try_from(pick(&state)).unwrap_or(i64::MAX))
            }
            Value::Rejected => encode_by_reason(
                &mut encoder,
                &[
                    ("queue_full", state.queue_full),
                    ("queue_timeout", state.queue_timeout),
                    ("deadline", state.elapsed),
                ],
            ),
        }
    }

    fn metric_type(&self) -> MetricType {
        match self.value {
            Value::Gauge(_) => MetricType::Gauge,
            Value::Rejected => MetricType::Counter,
        }
    }
}

/// Reads a pool's nodes.
type ReadNodes = Arc<dyn Fn() -> Vec<NodeState> + Send + Sync>;

fn read_nodes<S, R>(pool: &Pool<S, R>) -> ReadNodes
where
    S: Service<R> + Send + 'static,
    R: 'static,
{
    let pool = pool.clone();
    Arc::new(move || pool.nodes())
}

/// The dashboard's panel of a node pool titled `title`: each node's success rate, weight,
/// in-flight calls and limit, and its calls by outcome. Pass it to
/// [`Routes::panel`](crate::Routes::panel).
pub fn pool_panel<S, R>(title: impl Into<String>, pool: &Pool<S, R>) -> Panel
where
    S: Service<R> + Send + 'static,
    R: 'static,
{
    let nodes = read_nodes(pool);
    let no_capacity = {
        let pool = pool.clone();
        move || pool.no_capacity()
    };
    Panel::new(title, move || {
        let nodes = nodes();
        let healthy = nodes
            .iter()
            .filter(|n| n.rate >= status_traffic::pool::HEALTHY_RATE)
            .count();
        let header = [
            "node",
            "success",
            "weight",
            "in flight",
            "limit",
            "ok",
            "dropped",
            "failed",
            "skipped full",
        ]
        .map(str::to_owned)
        .to_vec();
        let rows = nodes
            .iter()
            .map(|n| {
                vec![
                    n.name.clone(),
                    format!("{:.1} %", n.rate * 100.0),
                    format!("{:.3}", n.weight),
                    n.in_flight.to_string(),
                    n.limit.to_string(),
                    n.success.to_string(),
                    n.drop.to_string(),
                    n.ignore.to_string(),
                    n.no_capacity.to_string(),
                ]
            })
            .collect();
        PanelView::new()
            .fact("Healthy nodes", format!("{healthy} of {}", nodes.len()))
            .fact("Refused, no capacity", no_capacity().to_string())
            .table(header, rows)
    })
}

/// Registers a node pool's metrics under the label `pool = name`, read when scraped:
/// `status_pool_node_weight{node}` and `status_pool_requests_total{node,outcome}` (`success`,
/// `drop`, `ignore`, and `no_capacity`: the times the cascade found the node at its limit and
/// went on). Pass it to [`Routes::register_metrics`](crate::Routes::register_metrics).
pub fn pool_metrics<S, R>(
    name: impl Into<String>,
    pool: &Pool<S, R>,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static
where
    S: Service<R> + Send + 'static,
    R: 'static,
{
    let name = name.into();
    let nodes = read_nodes(pool);
    move |metrics| {
        let sub = metrics.sub_registry_with_label(("pool".into(), name.into()));
        sub.register(
            "status_pool_node_weight",
            "Each node's weight in the pool's shuffle: its success rate, cubed",
            PoolMetric {
                nodes: Arc::clone(&nodes),
                requests: false,
            },
        );
        sub.register(
            "status_pool_requests",
            "Calls of each node, by outcome",
            PoolMetric {
                nodes,
                requests: true,
            },
        );
    }
}

/// A pool's metric, read when scraped.
struct PoolMetric {
    nodes: ReadNodes,
    requests: bool,
}

impl std::fmt::Debug for PoolMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolMetric").finish_non_exhaustive()
    }
}

impl EncodeMetric for PoolMetric {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        for node in (self.nodes)() {
            if self.requests {
                for (outcome, count) in [
                    ("success", node.success),
                    ("drop", node.drop),
                    ("ignore", node.ignore),
                    ("no_capacity", node.no_capacity),
                ] {
                    encoder
                        .encode_family(&[("node", node.name.as_str()), ("outcome", outcome)])?
                        .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                }
            } else {
                encoder
                    .encode_family(&[("node", node.name.as_str())])?
                    .encode_gauge(&node.weight)?;
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        if self.requests {
            MetricType::Counter
        } else {
            MetricType::Gauge
        }
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

/// The dashboard's panel of a culler titled `title`: failures in the window against the
/// threshold, the budget, refusals, and the last decision and why.
pub fn cull_panel(title: impl Into<String>, culler: &CullerHandle) -> Panel {
    let culler = culler.clone();
    Panel::new(title, move || {
        let s = culler.state();
        let mut view = PanelView::new()
            .fact(
                format!("Failures in {} s", s.window_s),
                format!("{} (threshold {})", s.failures, s.threshold),
            )
            .fact("Culled", if s.culled { "yes" } else { "no" })
            .fact("Budget", s.budget.clone())
            .fact("Refused, budget spent", s.denied_spent.to_string())
            .fact(
                "Refused, budget unreachable",
                s.denied_unreachable.to_string(),
            );
        if let Some((at, why)) = &s.last {
            view = view.fact(
                "Last decision",
                format!("{why} ({})", at.format("%H:%M:%S UTC")),
            );
        }
        view
    })
}

/// Registers a culler's metrics, read when scraped: `status_cull_window_failures`,
/// `status_cull_culled` (0/1) and `status_cull_denied_total{reason}` (`spent`,
/// `unreachable`). Pass it to [`Routes::register_metrics`](crate::Routes::register_metrics).
pub fn cull_metrics(
    culler: &CullerHandle,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static {
    let culler = culler.clone();
    move |metrics| {
        let read = |value| CullMetric {
            culler: culler.clone(),
            value,
        };
        metrics.register(
            "status_cull_window_failures",
            "Failures of live traffic in the culler's window, at its last look",
            read(CullValue::Failures),
        );
        metrics.register(
            "status_cull_culled",
            "Whether this instance culled itself (1) or not (0)",
            read(CullValue::Culled),
        );
        metrics.register(
            "status_cull_denied",
            "Culls the budget refused, by reason",
            read(CullValue::Denied),
        );
    }
}

#[derive(Debug, Clone, Copy)]
enum CullValue {
    Failures,
    Culled,
    Denied,
}

/// A culler's metric, read when scraped.
#[derive(Debug)]
struct CullMetric {
    culler: CullerHandle,
    value: CullValue,
}

impl EncodeMetric for CullMetric {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = self.culler.state();
        match self.value {
            CullValue::Failures => {
                encoder.encode_gauge(&i64::try_from(s.failures).unwrap_or(i64::MAX))
            }
            CullValue::Culled => encoder.encode_gauge(&i64::from(s.culled)),
            CullValue::Denied => encode_by_reason(
                &mut encoder,
                &[
                    ("spent", s.denied_spent),
                    ("unreachable", s.denied_unreachable),
                ],
            ),
        }
    }

    fn metric_type(&self) -> MetricType {
        match self.value {
            CullValue::Denied => MetricType::Counter,
            _ => MetricType::Gauge,
        }
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
