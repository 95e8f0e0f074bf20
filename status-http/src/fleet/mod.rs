//! The fleet over HTTP: `GET /fleet` (the data centers from memory, the instances a page at a
//! time from the store), for GSLB `GET /fleet/datacenters/{dc}` (from memory, never the
//! store), the fleet page ([`page`]), its metrics, and fleet-aware readiness.

#[cfg(feature = "metrics")]
mod metrics;
#[cfg(feature = "dashboard")]
pub(crate) mod page;

#[cfg(feature = "metrics")]
pub(crate) use self::metrics::register_metrics;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use status_fleet::{FleetSource, FleetView, InstancePage, InstanceQuery, MAX_PAGE};

use crate::error::ApiError;
use crate::query::Params;
use crate::sync::lock;

/// How many instances a page lists when not asked (at most `status_fleet::MAX_PAGE`).
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

    /// The view, for a person or a tool reading what fails across the fleet (not a balancer
    /// asking after a data center): told to the source, so that a large fleet's store sends
    /// this instance the whole list for a while.
    pub(crate) fn looked_at(&self) -> Arc<FleetView> {
        self.source.look();
        self.source.view()
    }

    /// The source, for the core's readiness composition.
    pub(crate) fn source(&self) -> Arc<dyn FleetSource> {
        Arc::clone(&self.source)
    }

    /// Runs `read` on the rendering of the current view, made once per view.
    fn rendered<T>(&self, read: impl FnOnce(&Rendered) -> T) -> T {
        let view = self.view();
        let mut cached = lock(&self.json);
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

/// What the fleet routes share.
#[derive(Debug)]
pub(crate) struct FleetState {
    /// The host the fleet page says it is served from.
    #[cfg(feature = "dashboard")]
    pub(crate) hostname: String,
    /// The fleet view, if this instance has one.
    pub(crate) fleet: Option<Fleet>,
}

fn source(state: &FleetState) -> Result<&Fleet, ApiError> {
    state
        .fleet
        .as_ref()
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "this instance has no fleet view"))
}

/// `?datacenter=`, `?cursor=` and `?limit=` (1 to 500, default 100); anything else is
/// ignored.
#[derive(Debug, Default, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams))]
#[cfg_attr(feature = "openapi", into_params(parameter_in = Query))]
pub(crate) struct FleetQuery {
    /// Only this data center's instances.
    #[cfg_attr(feature = "openapi", param(nullable = false))]
    datacenter: Option<String>,
    /// Where the page starts: a previous page's `nextCursor` (the page's next link).
    #[cfg_attr(feature = "openapi", param(nullable = false))]
    cursor: Option<String>,
    /// At most this many instances, 1 to 500 (default 100).
    #[cfg_attr(feature = "openapi", param(value_type = Option<usize>, nullable = false))]
    limit: Option<String>,
}

impl FleetQuery {
    /// The query these ask for; a limit out of range is a 400.
    fn query(self) -> Result<InstanceQuery, ApiError> {
        let limit = match self.limit.as_deref() {
            None | Some("") => DEFAULT_LIMIT,
            Some(limit) => limit
                .parse()
                .ok()
                .filter(|n| (1..=MAX_PAGE).contains(n))
                .ok_or_else(|| ApiError::bad_request(format!("limit must be 1 to {MAX_PAGE}")))?,
        };
        Ok(InstanceQuery {
            datacenter: self.datacenter.filter(|d| !d.is_empty()),
            cursor: self.cursor.filter(|c| !c.is_empty()),
            limit,
            worst_first: false,
        })
    }
}

/// A page of instances, or why not, by the error's kind: the store unreachable is the
/// store's (503), anything else (a bad cursor) the client's (400).
async fn list(fleet: &Fleet, query: InstanceQuery) -> Result<InstancePage, ApiError> {
    fleet.source.instances(query).await.map_err(|e| {
        if e.is_unavailable() {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
        } else {
            ApiError::bad_request(e.to_string())
        }
    })
}

/// The JSON of `/fleet`: the view's fields, then a page of instances, or why the store
/// could not list them.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct FleetAnswer<'a> {
    #[serde(flatten)]
    view: &'a FleetView,
    #[serde(flatten)]
    page: &'a InstancePage,
    #[serde(skip_serializing_if = "Option::is_none")]
    instances_unavailable: Option<String>,
}

/// GET `/fleet`: every data center (from memory) and a page of instances (`?datacenter=`,
/// `?cursor=`, `?limit=` up to 500), condition, holds, age, stale. With the store down, the
/// last view (marked stale) and no instances, with `instancesUnavailable` saying why: an
/// operator still sees what the instance knows.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/fleet", tag = "fleet",
    params(FleetQuery),
    responses(
        (status = 200, description = "The fleet: data centers, and a page of instances with the next page's cursor", content_type = "application/json", body = Object),
        (status = 400, description = "A limit out of range, or a cursor the store did not hand out", body = crate::schema::Error),
        (status = 404, description = "This instance has no fleet view", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404 without a fleet view, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn fleet(
    State(state): State<Arc<FleetState>>,
    Params(query): Params<FleetQuery>,
) -> Result<Response, ApiError> {
    let fleet = source(&state)?;
    let query = query.query()?;
    let view = fleet.looked_at();
    let (page, instances_unavailable) = match list(fleet, query).await {
        Ok(page) => (page, None),
        Err(e) if e.status() == StatusCode::SERVICE_UNAVAILABLE => {
            (InstancePage::default(), Some(e.message().to_owned()))
        }
        Err(e) => return Err(e),
    };
    let body = json(&FleetAnswer {
        view: &view,
        page: &page,
        instances_unavailable,
    });
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static(crate::respond::JSON),
        )],
        body,
    )
        .into_response())
}

/// The JSON of `/fleet/dependencies`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct DependenciesAnswer<'a> {
    /// Whether the view is older than it should be (readiness then excuses nothing).
    stale: bool,
    /// What fails, every data center's, in the order [`FleetView::what_fails`] gives.
    dependencies: Vec<DependencyRow<'a>>,
}

/// A failing dependency of a data center, and since when this instance has seen it.
#[derive(serde::Serialize)]
struct DependencyRow<'a> {
    #[serde(flatten)]
    failure: &'a status_fleet::DependencyFailure,
    /// When this instance first read it failing at this level (RFC 3339, UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    since: Option<String>,
}

/// When `first`, an instant of this process, was on the wall clock.
pub(crate) fn wall(first: std::time::Instant) -> chrono::DateTime<chrono::Utc> {
    let ago = std::time::Instant::now().saturating_duration_since(first);
    chrono::Utc::now() - chrono::Duration::from_std(ago).unwrap_or_default()
}

/// GET `/fleet/dependencies`: what fails across the fleet, from memory: each data center's
/// failing dependencies, a row a dependency and level (`instances` fail it at that level or
/// worse, of `fresh`), `shared` when more than half of the data center's fresh instances
/// (and at least two) fail it, `since` when this instance first saw it. Shared failures
/// first, then the worst. With the store
/// unreachable, the last view's rows, marked `stale` (fleet-aware readiness then excuses
/// nothing).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/fleet/dependencies", tag = "fleet",
    responses(
        (status = 200, description = "What fails across the fleet, by data center, dependency and level", content_type = "application/json", body = Object),
        (status = 404, description = "This instance has no fleet view", body = crate::schema::Error),
        (status = "default", description = "A rejected request (404 without a fleet view, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn dependencies(
    State(state): State<Arc<FleetState>>,
) -> Result<Response, ApiError> {
    let fleet = source(&state)?;
    let view = fleet.looked_at();
    let rows = view
        .what_fails()
        .into_iter()
        .map(|failure| DependencyRow {
            failure,
            since: failure
                .since
                .map(|first| wall(first).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        })
        .collect();
    let body = json(&DependenciesAnswer {
        stale: view.stale,
        dependencies: rows,
    });
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static(crate::respond::JSON),
        )],
        body,
    )
        .into_response())
}

/// GET `/fleet/datacenters/{dc}`: for GSLB: 200 healthy, 503 unhealthy, 200 with
/// `failOpen: true` when every data center is unhealthy; 404 for a data center a fresh view
/// does not know. A data center unknown to a stale view (the store not reached, since the
/// start or lately) is unknown because unreachable: it fails open (200, `failOpen`,
/// `stale`), as every data center of a view stale for long does. `condition` comes first, as
/// in the summary.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/fleet/datacenters/{dc}", tag = "fleet",
    params(("dc" = String, Path, description = "The data center")),
    responses(
        (status = 200, description = "Healthy, or every data center unhealthy (`failOpen`)", content_type = "application/json", body = Object),
        (status = 503, description = "Unhealthy while another data center is healthy", content_type = "application/json", body = Object),
        (status = 404, description = "An unknown data center, or no fleet view", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404 unknown data center, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn datacenter(
    State(state): State<Arc<FleetState>>,
    Path(dc): Path<String>,
) -> Result<Response, ApiError> {
    let fleet = source(&state)?;
    let known = fleet.rendered(|r| {
        let stale = r.view.stale;
        (r.datacenters.get(&dc).cloned(), stale)
    });
    let (healthy, json) = match known {
        (Some(answer), _) => answer,
        (None, true) => (true, unreachable_datacenter(&dc)),
        (None, false) => return Err(ApiError::not_found("data center", &dc)),
    };
    let status = if healthy {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((
        status,
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static(crate::respond::JSON),
        )],
        json,
    )
        .into_response())
}

/// The answer for a data center a stale view does not know: failing open, as the fleet's
/// rules fail open when the store cannot be read.
fn unreachable_datacenter(dc: &str) -> axum::body::Bytes {
    json(&serde_json::json!({
        "condition": "OK",
        "datacenter": dc,
        "healthy": false,
        "failOpen": true,
        "stale": true,
        "serving": 0,
        "fresh": 0,
        "reason": "the fleet's store has not been read lately: this data center is unknown because unreachable, and fails open",
    }))
}

/// Adds the fleet's routes: the fleet, a data center's verdict for GSLB, the dependencies
/// failing across it; with `dashboard`, its page.
pub(crate) fn routes<S>(router: axum::Router<S>) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<FleetState>: axum::extract::FromRef<S>,
{
    use axum::routing::get;
    let router = router
        .route("/fleet", get(fleet))
        .route("/fleet/datacenters/{dc}", get(datacenter))
        .route("/fleet/dependencies", get(dependencies));
    #[cfg(feature = "dashboard")]
    let router = router.route("/status/fleet", get(page::page));
    router
}
