//! The fleet over HTTP: `GET /fleet` and, for GSLB, `GET /fleet/datacenters/{dc}`; both read
//! the fleet view from memory, never the store.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;
use status_core::fleet::FleetView;
use status_core::Readiness;

use crate::error::ApiError;
use crate::state::AppState;

/// Where the fleet view comes from (e.g. `status_core::fleet::Fleet::view`), and the JSON of
/// the last view served, reused while the source hands out the same `Arc`.
#[derive(Clone)]
pub(crate) struct FleetSource {
    read: Arc<dyn Fn() -> Arc<FleetView> + Send + Sync>,
    json: Arc<std::sync::Mutex<Option<Rendered>>>,
}

/// A view, its JSON, and each data center's: whether it answers healthy, and its JSON.
struct Rendered {
    view: Arc<FleetView>,
    fleet: axum::body::Bytes,
    datacenters: std::collections::BTreeMap<String, (bool, axum::body::Bytes)>,
}

impl FleetSource {
    pub(crate) fn new(read: impl Fn() -> Arc<FleetView> + Send + Sync + 'static) -> Self {
        Self {
            read: Arc::new(read),
            json: Arc::default(),
        }
    }

    fn view(&self) -> Arc<FleetView> {
        (self.read)()
    }

    /// Runs `read` on the rendering of the current view, made once per view.
    fn rendered<T>(&self, read: impl FnOnce(&Rendered) -> T) -> T {
        let view = self.view();
        let mut cached = self
            .json
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = cached.as_ref().is_some_and(|r| Arc::ptr_eq(&r.view, &view));
        if !current {
            *cached = Some(Rendered {
                fleet: json(&*view),
                datacenters: view
                    .datacenters
                    .iter()
                    .map(|dc| (dc.datacenter.clone(), (dc.answers_healthy(), json(dc))))
                    .collect(),
                view,
            });
        }
        read(cached.as_ref().expect("rendered just now"))
    }
}

fn json<T: serde::Serialize>(value: &T) -> axum::body::Bytes {
    axum::body::Bytes::from(serde_json::to_vec(value).expect("a fleet view serializes"))
}

impl std::fmt::Debug for FleetSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetSource").finish_non_exhaustive()
    }
}

fn source(state: &AppState) -> Result<&FleetSource, ApiError> {
    state
        .fleet
        .as_ref()
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "this instance has no fleet view"))
}

/// GET `/fleet`: every data center and instance: condition, holds, age, stale.
#[utoipa::path(get, path = "/fleet", tag = "fleet",
    responses(
        (status = 200, description = "The fleet: data centers and their instances", content_type = "application/json", body = Object),
        (status = 404, description = "This instance has no fleet view", body = crate::openapi::Error),
        (status = "default", description = "A rejected request (400, 404 without a fleet view, 405, 408, 413, 414, 431)", body = crate::openapi::Error)))]
pub(crate) async fn fleet(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let json = source(&state)?.rendered(|r| r.fleet.clone());
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        json,
    )
        .into_response())
}

/// GET `/fleet/datacenters/{dc}`: for GSLB: 200 healthy, 503 unhealthy, 200 with
/// `failOpen: true` when every data center is unhealthy; 404 for a data center it has never
/// heard of. `condition` comes first, as in the summary.
#[utoipa::path(get, path = "/fleet/datacenters/{dc}", tag = "fleet",
    params(("dc" = String, Path, description = "The data center")),
    responses(
        (status = 200, description = "Healthy, or every data center unhealthy (`failOpen`)", content_type = "application/json", body = Object),
        (status = 503, description = "Unhealthy while another data center is healthy", content_type = "application/json", body = Object),
        (status = 404, description = "An unknown data center, or no fleet view", body = crate::openapi::Error),
        (status = "default", description = "A rejected request (400, 404 unknown data center, 405, 408, 413, 414, 431)", body = crate::openapi::Error)))]
pub(crate) async fn datacenter(
    State(state): State<Arc<AppState>>,
    Path(dc): Path<String>,
) -> Result<Response, ApiError> {
    let (healthy, json) = source(&state)?
        .rendered(|r| r.datacenters.get(&dc).cloned())
        .ok_or_else(|| ApiError::not_found("data center", &dc))?;
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        json,
    )
        .into_response())
}

/// `status_fleet_datacenter_healthy{dc}`: 1 when the data center is healthy by the rule, 0
/// when not (failing open or not: this is for people).
pub(crate) struct FleetMetric(pub(crate) FleetSource);

impl std::fmt::Debug for FleetMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetMetric").finish_non_exhaustive()
    }
}

impl EncodeMetric for FleetMetric {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        for dc in &self.0.view().datacenters {
            encoder
                .encode_family(&[("dc", dc.datacenter.as_str())])?
                .encode_gauge(&i64::from(dc.healthy))?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// The fleet page's view: computed here, printed (and escaped) by the template.
#[derive(askama::Template)]
#[template(path = "fleet.html")]
struct FleetPage {
    hostname: String,
    stale: bool,
    fail_open: bool,
    datacenters: Vec<DcRow>,
}

struct DcRow {
    name: String,
    healthy: bool,
    class: &'static str,
    label: &'static str,
    serving: usize,
    fresh: usize,
    instances: Vec<InstanceRow>,
}

struct InstanceRow {
    id: String,
    url: String,
    condition: &'static str,
    holds: String,
    version: String,
    age: String,
    stale: bool,
}

/// GET `/status/fleet`: the fleet on the dashboard: data centers, their instances, holds,
/// stale ones marked, links to each instance's dashboard.
#[utoipa::path(get, path = "/status/fleet", tag = "fleet",
    responses(
        (status = 200, description = "The fleet page", content_type = "text/html", body = String),
        (status = 404, description = "This instance has no fleet view", body = crate::openapi::Error),
        (status = "default", description = "A rejected request (400, 405, 408, 413, 414, 431)", body = crate::openapi::Error)))]
pub(crate) async fn page(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    use askama::Template;

    let view = source(&state)?.view();
    let page = FleetPage {
        hostname: state.registry.hostname().to_owned(),
        stale: view.stale,
        fail_open: view.fail_open,
        datacenters: view
            .datacenters
            .iter()
            .map(|dc| {
                let (class, label) = match (dc.healthy, dc.fail_open) {
                    (true, _) => ("ok", "✔ healthy"),
                    (false, true) => ("minor", "▲ failing open"),
                    (false, false) => ("outage", "✖ unhealthy"),
                };
                DcRow {
                    name: dc.datacenter.clone(),
                    healthy: dc.healthy,
                    class,
                    label,
                    serving: dc.serving,
                    fresh: dc.fresh,
                    instances: dc
                        .instances
                        .iter()
                        .map(|i| InstanceRow {
                            id: i.summary.instance_id.clone(),
                            url: i.summary.url.clone(),
                            condition: i.summary.condition.as_str(),
                            holds: if i.summary.holds.is_empty() {
                                "in rotation".to_owned()
                            } else {
                                i.summary.holds.join(", ")
                            },
                            version: i.summary.version.clone(),
                            age: format!("{:.1} s ago", i.age_ms as f64 / 1000.0),
                            stale: i.stale,
                        })
                        .collect(),
                }
            })
            .collect(),
    };
    let html = page.render().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot render the fleet page: {e}"),
        )
    })?;
    let mut response = axum::response::Html(html).into_response();
    response.headers_mut().insert(
        axum::http::header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static(crate::dashboard::CSP),
    );
    Ok(response)
}

/// This instance in the fleet, for fleet-aware readiness.
#[derive(Debug, Clone)]
pub(crate) struct Me {
    pub(crate) instance_id: String,
    pub(crate) datacenter: String,
}

/// Fleet-aware readiness, when configured: an instance that fails readiness on its condition
/// alone (startup done, no hold) stays ready while more than half of the other fresh instances
/// of its data center fail the same way: the failure is the data center's, and whether it
/// gets traffic is left to the data-center endpoint (and GSLB). Answers which rule decided;
/// `None` when fleet-aware readiness is off.
pub(crate) fn fleet_aware(state: &AppState, readiness: &mut Readiness) -> Option<&'static str> {
    let me = state.fleet_aware.as_ref()?;
    let fleet = state.fleet.as_ref()?;
    if readiness.ready || !readiness.startup_complete || readiness.drain.is_some() {
        return Some("instance");
    }
    let view = fleet.view();
    let Some(dc) = view.datacenter(&me.datacenter) else {
        return Some("instance");
    };
    let others: Vec<_> = dc
        .instances
        .iter()
        .filter(|i| !i.stale && i.summary.instance_id != me.instance_id)
        .collect();
    let failing = others
        .iter()
        .filter(|i| i.summary.condition >= readiness.condition)
        .count();
    if others.is_empty() || failing * 2 <= others.len() {
        return Some("instance");
    }
    readiness.ready = true;
    readiness.reasons = vec![format!(
        "{} is shared by {failing} of the {} other instances of {}: left to the data-center endpoint",
        readiness.condition,
        others.len(),
        me.datacenter
    )];
    Some("fleet")
}
