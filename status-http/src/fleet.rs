//! The fleet over HTTP: `GET /fleet` (the data centers from memory, the instances a page at a
//! time from the store) and, for GSLB, `GET /fleet/datacenters/{dc}` (from memory, never the
//! store).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use status_core::fleet::{
    FleetSource, FleetView, InstancePage, InstanceQuery, BEAT_BUCKETS, REJECTIONS,
};
use status_core::Readiness;

use crate::error::ApiError;
use crate::state::AppState;

/// The most instances a page lists, and how many when not asked.
const MAX_LIMIT: usize = 500;
const DEFAULT_LIMIT: usize = 100;

/// Where the fleet comes from, and the JSON of each data center in the last view served,
/// reused while the source hands out the same `Arc`.
#[derive(Clone)]
pub(crate) struct Fleet {
    source: Arc<dyn FleetSource>,
    json: Arc<std::sync::Mutex<Option<Rendered>>>,
}

/// A view and each data center's answer: whether it answers healthy, and its JSON.
struct Rendered {
    view: Arc<FleetView>,
    datacenters: std::collections::BTreeMap<String, (bool, axum::body::Bytes)>,
}

impl Fleet {
    pub(crate) fn new(source: impl FleetSource) -> Self {
        Self {
            source: Arc::new(source),
            json: Arc::default(),
        }
    }

    fn view(&self) -> Arc<FleetView> {
        self.source.view()
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

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet").finish_non_exhaustive()
    }
}

fn source(state: &AppState) -> Result<&Fleet, ApiError> {
    state
        .fleet
        .as_ref()
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "this instance has no fleet view"))
}

/// `?datacenter=`, `?cursor=` and `?limit=` (1 to 500, default 100); anything else is
/// ignored.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Params {
    datacenter: Option<String>,
    cursor: Option<String>,
    limit: Option<String>,
}

impl Params {
    /// The query these ask for; a limit out of range is a 400.
    fn query(self) -> Result<InstanceQuery, ApiError> {
        let limit = match self.limit.as_deref() {
            None | Some("") => DEFAULT_LIMIT,
            Some(limit) => limit
                .parse()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| ApiError::bad_request(format!("limit must be 1 to {MAX_LIMIT}")))?,
        };
        Ok(InstanceQuery {
            datacenter: self.datacenter.filter(|d| !d.is_empty()),
            cursor: self.cursor.filter(|c| !c.is_empty()),
            limit,
        })
    }
}

/// The query of a fleet route, or a 400.
fn params(
    params: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<InstanceQuery, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::bad_request(e.body_text()))?;
    params.query()
}

/// A page of instances, or why not: a bad cursor is the client's (400), anything else the
/// store's (503).
async fn list(fleet: &Fleet, query: InstanceQuery) -> Result<InstancePage, ApiError> {
    fleet.source.instances(query).await.map_err(|e| {
        if e.to_string().contains("cursor") {
            ApiError::bad_request(e.to_string())
        } else {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
        }
    })
}

/// The JSON of `/fleet`: the view's fields, then a page of instances.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct FleetAnswer<'a> {
    #[serde(flatten)]
    view: &'a FleetView,
    #[serde(flatten)]
    page: &'a InstancePage,
}

/// GET `/fleet`: every data center (from memory) and a page of instances (`?datacenter=`,
/// `?cursor=`, `?limit=` up to 500), condition, holds, age, stale.
#[utoipa::path(get, path = "/fleet", tag = "fleet",
    params(
        ("datacenter" = Option<String>, Query, description = "Only this data center's instances"),
        ("cursor" = Option<String>, Query, description = "Where the page starts: a previous page's `nextCursor`"),
        ("limit" = Option<usize>, Query, description = "At most this many instances, 1 to 500 (default 100)")),
    responses(
        (status = 200, description = "The fleet: data centers, and a page of instances with the next page's cursor", content_type = "application/json", body = Object),
        (status = 400, description = "A limit out of range, or a cursor the store did not hand out", body = crate::openapi::Error),
        (status = 404, description = "This instance has no fleet view", body = crate::openapi::Error),
        (status = 503, description = "The fleet's store cannot list its instances now", body = crate::openapi::Error),
        (status = "default", description = "A rejected request (400, 404 without a fleet view, 405, 408, 413, 414, 431)", body = crate::openapi::Error)))]
pub(crate) async fn fleet(
    State(state): State<Arc<AppState>>,
    query: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let fleet = source(&state)?;
    let query = params(query)?;
    let view = fleet.view();
    let page = list(fleet, query).await?;
    let body = json(&FleetAnswer {
        view: &view,
        page: &page,
    });
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
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
pub(crate) struct FleetMetric(pub(crate) Fleet);

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

/// `status_fleet_exchange_seconds` (a histogram of the beats into the store) and
/// `status_fleet_rejected_total{reason}` (what the store refused or healed), when the source
/// has a store.
pub(crate) struct FleetStoreMetric {
    pub(crate) fleet: Fleet,
    pub(crate) rejected: bool,
}

impl std::fmt::Debug for FleetStoreMetric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetStoreMetric").finish_non_exhaustive()
    }
}

impl EncodeMetric for FleetStoreMetric {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(stats) = self.fleet.source.stats() else {
            return Ok(());
        };
        if self.rejected {
            for (reason, count) in REJECTIONS.iter().zip(stats.rejected) {
                encoder
                    .encode_family(&[("reason", *reason)])?
                    .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
            }
            return Ok(());
        }
        let mut cumulative = 0;
        let buckets: Vec<(f64, u64)> = BEAT_BUCKETS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(stats.buckets)
            .map(|(le, n)| {
                cumulative += n;
                (le, cumulative)
            })
            .collect();
        encoder.encode_histogram::<NoLabelSet>(stats.seconds, stats.beats, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        if self.rejected {
            MetricType::Counter
        } else {
            MetricType::Histogram
        }
    }
}

/// The fleet page's view: computed here, printed (and escaped) by the template.
#[derive(askama::Template)]
#[template(path = "fleet.html")]
struct FleetPage {
    hostname: String,
    stale: bool,
    fail_open: bool,
    /// Why the instances could not be listed, if they could not.
    unlisted: Option<String>,
    /// The next page's query string.
    next: Option<String>,
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

/// GET `/status/fleet`: the fleet on the dashboard: data centers (from memory) and a page of
/// their instances (from the store: `?datacenter=`, `?cursor=`, `?limit=`), holds, stale ones
/// marked, links to each instance's dashboard and to the next page. With the store down the
/// page still shows the data centers, and says why the instances are missing.
#[utoipa::path(get, path = "/status/fleet", tag = "fleet",
    params(
        ("datacenter" = Option<String>, Query, description = "Only this data center's instances"),
        ("cursor" = Option<String>, Query, description = "Where the page starts: the previous page's next link"),
        ("limit" = Option<usize>, Query, description = "At most this many instances, 1 to 500 (default 100)")),
    responses(
        (status = 200, description = "The fleet page", content_type = "text/html", body = String),
        (status = 400, description = "A limit out of range, or a cursor the store did not hand out", body = crate::openapi::Error),
        (status = 404, description = "This instance has no fleet view", body = crate::openapi::Error),
        (status = "default", description = "A rejected request (400, 405, 408, 413, 414, 431)", body = crate::openapi::Error)))]
pub(crate) async fn page(
    State(state): State<Arc<AppState>>,
    query: Result<Query<Params>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    use askama::Template;

    let fleet = source(&state)?;
    let query = params(query)?;
    let view = fleet.view();
    let (instances, next, unlisted) = match list(fleet, query.clone()).await {
        Ok(page) => (page.instances, page.next_cursor, None),
        Err(e) if e.status() == StatusCode::BAD_REQUEST => return Err(e),
        Err(e) => (Vec::new(), None, Some(e.message().to_owned())),
    };
    let next = next.map(|cursor| {
        let mut link = format!("?cursor={}&limit={}", encode(&cursor), query.limit);
        if let Some(dc) = &query.datacenter {
            link += &format!("&datacenter={}", encode(dc));
        }
        link
    });
    let page = FleetPage {
        hostname: state.registry.hostname().to_owned(),
        stale: view.stale,
        fail_open: view.fail_open,
        unlisted,
        next,
        datacenters: view
            .datacenters
            .iter()
            .filter(|dc| query.wants(&dc.datacenter))
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
                    instances: instances
                        .iter()
                        .filter(|i| i.summary.datacenter == dc.datacenter)
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

/// `text` for a query string: every byte but letters, digits, `-`, `.`, `_` and `~` escaped.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
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
    // A stale view is no information: the instance's own rule answers.
    let Some((failing, others)) =
        view.shared_failure(&me.datacenter, &me.instance_id, readiness.condition)
    else {
        return Some("instance");
    };
    readiness.ready = true;
    readiness.reasons = vec![format!(
        "{} is shared by {failing} of the {} other instances of {}: left to the data-center endpoint",
        readiness.condition,
        others,
        me.datacenter
    )];
    Some("fleet")
}
