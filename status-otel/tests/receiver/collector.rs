//! A collector on loopback: OTLP/HTTP protobuf in, decoded and kept; answering, or hanging.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point, Metric};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::sync::watch;

#[derive(Default)]
pub(crate) struct Received {
    /// Requests that came gzipped (`Content-Encoding: gzip`).
    pub(crate) gzipped: usize,
    pub(crate) metrics: Vec<ExportMetricsServiceRequest>,
    pub(crate) logs: Vec<LogRecord>,
    pub(crate) spans: Vec<Span>,
    /// The resource attributes of the first request.
    pub(crate) resource: Vec<KeyValue>,
}

#[derive(Clone)]
pub(crate) struct Collector {
    pub(crate) addr: SocketAddr,
    pub(crate) received: Arc<Mutex<Received>>,
    up: Arc<watch::Sender<bool>>,
}

impl Collector {
    pub(crate) async fn start() -> Self {
        let received = Arc::new(Mutex::new(Received::default()));
        let (up, _) = watch::channel(true);
        let up = Arc::new(up);
        let state = (Arc::clone(&received), Arc::clone(&up));
        let app = Router::new()
            .route("/v1/metrics", post(metrics))
            .route("/v1/logs", post(logs))
            .route("/v1/traces", post(traces))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { addr, received, up }
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Down: every request is read and never answered, as a collector that hangs.
    pub(crate) fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }

    /// What `read` finds in the latest metric `name` that it finds anything in.
    fn latest<T>(&self, name: &str, read: impl Fn(&metric::Data) -> Option<T>) -> Option<T> {
        let received = self.received.lock().unwrap();
        received
            .metrics
            .iter()
            .rev()
            .flat_map(metrics_named(name))
            .find_map(|m| m.data.as_ref().and_then(&read))
    }

    /// The latest value of the state set `name` for the data point whose attributes include
    /// every one of `with`: a state set is an UpDownCounter, an OTLP sum that is not
    /// monotonic (a gauge, or a monotonic sum, reads as nothing).
    pub(crate) fn state(&self, name: &str, with: &[(&str, &str)]) -> Option<i64> {
        self.latest(name, |data| match data {
            metric::Data::Sum(s) if !s.is_monotonic => match s
                .data_points
                .iter()
                .find(|p| matches(&p.attributes, with))?
                .value
            {
                Some(number_data_point::Value::AsInt(v)) => Some(v),
                _ => None,
            },
            _ => None,
        })
    }

    /// The states the latest export of the state set `name` reported for the points matching
    /// `with`, sorted, with their values.
    pub(crate) fn states(&self, name: &str, with: &[(&str, &str)]) -> Vec<(String, i64)> {
        self.latest(name, |data| match data {
            metric::Data::Sum(s) if !s.is_monotonic => {
                let mut states: Vec<(String, i64)> = s
                    .data_points
                    .iter()
                    .filter(|p| matches(&p.attributes, with))
                    .filter_map(|p| {
                        let state = attribute(&p.attributes, "status.state")?;
                        match p.value {
                            Some(number_data_point::Value::AsInt(v)) => Some((state, v)),
                            _ => None,
                        }
                    })
                    .collect();
                states.sort();
                Some(states)
            }
            _ => None,
        })
        .unwrap_or_default()
    }

    /// The unit the latest export of `name` declared.
    pub(crate) fn unit(&self, name: &str) -> Option<String> {
        let received = self.received.lock().unwrap();
        received
            .metrics
            .iter()
            .rev()
            .flat_map(metrics_named(name))
            .map(|m| m.unit)
            .next()
    }

    /// The attributes of the latest point of the floating-point gauge `name` matching `with`.
    pub(crate) fn gauge_attributes(
        &self,
        name: &str,
        with: &[(&str, &str)],
    ) -> Option<Vec<KeyValue>> {
        self.latest(name, |data| match data {
            metric::Data::Gauge(g) => g
                .data_points
                .iter()
                .find(|p| matches(&p.attributes, with))
                .map(|p| p.attributes.clone()),
            _ => None,
        })
    }

    /// The latest value of the floating-point gauge `name` for the point with `with`.
    pub(crate) fn gauge_f64(&self, name: &str, with: &[(&str, &str)]) -> Option<f64> {
        self.latest(name, |data| match data {
            metric::Data::Gauge(g) => match g
                .data_points
                .iter()
                .find(|p| matches(&p.attributes, with))?
                .value
            {
                Some(number_data_point::Value::AsDouble(v)) => Some(v),
                _ => None,
            },
            _ => None,
        })
    }

    /// The latest value of the sum (counter) `name` over the points matching `with`.
    pub(crate) fn sum(&self, name: &str, with: &[(&str, &str)]) -> Option<i64> {
        self.latest(name, |data| match data {
            metric::Data::Sum(s) => Some(
                s.data_points
                    .iter()
                    .filter(|p| matches(&p.attributes, with))
                    .map(|p| match p.value {
                        Some(number_data_point::Value::AsInt(v)) => v,
                        _ => 0,
                    })
                    .sum(),
            ),
            _ => None,
        })
    }

    /// The latest histogram `name`'s count over the points matching `with`.
    pub(crate) fn histogram_count(&self, name: &str, with: &[(&str, &str)]) -> Option<u64> {
        self.latest(name, |data| match data {
            metric::Data::Histogram(h) => Some(
                h.data_points
                    .iter()
                    .filter(|p| matches(&p.attributes, with))
                    .map(|p| p.count)
                    .sum(),
            ),
            _ => None,
        })
    }

    pub(crate) fn metric_requests(&self) -> usize {
        self.received.lock().unwrap().metrics.len()
    }
}

fn metrics_named(name: &str) -> impl Fn(&ExportMetricsServiceRequest) -> Vec<Metric> + '_ {
    move |request| {
        request
            .resource_metrics
            .iter()
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
            .filter(|m| m.name == name)
            .cloned()
            .collect()
    }
}

/// Whether `attributes` include every one of `with`.
fn matches(attributes: &[KeyValue], with: &[(&str, &str)]) -> bool {
    with.iter().all(|(k, v)| has(attributes, k, v))
}

pub(crate) fn has(attributes: &[KeyValue], key: &str, value: &str) -> bool {
    attributes
        .iter()
        .any(|kv| kv.key == key && string(kv.value.as_ref()).as_deref() == Some(value))
}

pub(crate) fn string(value: Option<&AnyValue>) -> Option<String> {
    match value?.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::IntValue(i) => Some(i.to_string()),
        _ => None,
    }
}

pub(crate) fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| string(kv.value.as_ref()))
}

type Shared = (Arc<Mutex<Received>>, Arc<watch::Sender<bool>>);

/// Waits while the collector is down: the request hangs, as a dead collector's does.
async fn wait_up(up: &watch::Sender<bool>) {
    let mut rx = up.subscribe();
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The body, gunzipped when it says it is gzipped.
fn unwrap_body(received: &Mutex<Received>, headers: &HeaderMap, body: &[u8]) -> Vec<u8> {
    let gzipped = headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    if !gzipped {
        return body.to_vec();
    }
    received.lock().unwrap().gzipped += 1;
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body), &mut plain)
        .expect("a valid gzip body");
    plain
}

fn protobuf_ok() -> impl IntoResponse {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        Bytes::new(),
    )
}

async fn metrics(
    State((received, up)): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    wait_up(&up).await;
    let body = unwrap_body(&received, &headers, &body);
    let request =
        ExportMetricsServiceRequest::decode(&body[..]).expect("a valid OTLP metrics body");
    let mut received = received.lock().unwrap();
    if received.resource.is_empty() {
        if let Some(resource) = request
            .resource_metrics
            .first()
            .and_then(|r| r.resource.as_ref())
        {
            received.resource = resource.attributes.clone();
        }
    }
    received.metrics.push(request);
    protobuf_ok()
}

async fn logs(
    State((received, up)): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    wait_up(&up).await;
    let body = unwrap_body(&received, &headers, &body);
    let request = ExportLogsServiceRequest::decode(&body[..]).expect("a valid OTLP logs body");
    let records = request
        .resource_logs
        .into_iter()
        .flat_map(|r| r.scope_logs)
        .flat_map(|s| s.log_records);
    received.lock().unwrap().logs.extend(records);
    protobuf_ok()
}

async fn traces(
    State((received, up)): State<Shared>,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    wait_up(&up).await;
    let body = unwrap_body(&received, &headers, &body);
    let request = ExportTraceServiceRequest::decode(&body[..]).expect("a valid OTLP traces body");
    let spans = request
        .resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans);
    received.lock().unwrap().spans.extend(spans);
    protobuf_ok()
}

/// Polls `done` every 20 ms for at most `limit`.
pub(crate) async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}
