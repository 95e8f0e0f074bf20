//! Durable history over HTTP: uptime and SLA of a dependency, a group or the system over any
//! window, the monthly report; the audit trail is read from it (`crate::trail`). Without a
//! history ([`Routes::history`](crate::Routes::history)) these routes answer 404.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use status_core::Registry;
use status_history::{History, Series};

#[cfg(feature = "dashboard")]
mod chart;
#[cfg(feature = "dashboard")]
pub(crate) mod objectives;
#[cfg(feature = "dashboard")]
pub(crate) mod page;
#[cfg(feature = "dashboard")]
pub(crate) use status_http_core::history::DaysQuery;
pub(crate) use status_http_core::history::{kept, rejection};
#[cfg(feature = "dashboard")]
pub(crate) use status_http_core::tiles;
pub(crate) mod exclusions;
pub(crate) mod sla;
pub(crate) mod slos;
pub(crate) mod transitions;

use crate::error::ApiError;
use crate::query::Params;
use crate::respond::{json_response, JSON};

/// What the history routes serve.
#[derive(Debug)]
pub(crate) struct HistoryState {
    pub(crate) registry: Registry,
    pub(crate) history: Option<History>,
    /// The public view: transitions' messages are not shown.
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) public: bool,
    /// The groups the public page shows: in the public view, the only groups whose
    /// objectives are listed.
    pub(crate) public_groups: Vec<String>,
    /// The overview's past days, drawn.
    #[cfg(feature = "dashboard")]
    pub(crate) tiles: tiles::TileCache,
}

impl HistoryState {
    pub(crate) fn history(&self) -> Result<&History, ApiError> {
        kept(self.history.as_ref())
    }

    /// The series of the registered dependency `id`, or the 404 of one not registered.
    pub(crate) fn dependency(&self, id: String) -> Result<Series, ApiError> {
        if self.registry.contains(&id) {
            Ok(Series::Dependency(id))
        } else {
            Err(ApiError::not_found("dependency", &id))
        }
    }

    /// The series of the registered group `name`, or the 404 of one not registered.
    pub(crate) fn group(&self, name: String) -> Result<Series, ApiError> {
        if self.registry.group(&name).is_some() {
            Ok(Series::Group(name))
        } else {
            Err(ApiError::not_found("group", &name))
        }
    }
}

/// `?from=&to=`: a window of RFC 3339 times.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WindowQuery {
    from: Option<String>,
    to: Option<String>,
}

/// `?month=YYYY-MM`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MonthQuery {
    month: Option<String>,
}

/// The query parameter `name`, `value`, as an RFC 3339 time, if given; a 400 when it is not
/// one.
pub(crate) fn time_param(
    name: &str,
    value: Option<&str>,
) -> Result<Option<DateTime<Utc>>, ApiError> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| {
                    ApiError::bad_request(format!(
                        "{name} must be an RFC 3339 time, such as 2026-11-01T00:00:00Z, not {v:?}"
                    ))
                })
        })
        .transpose()
}

/// `from` and `to` as RFC 3339 times (`to` now, `from` a day before `to`, when not given).
fn window(
    query: &WindowQuery,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let to = time_param("to", query.to.as_deref())?.unwrap_or(now);
    let from = time_param("from", query.from.as_deref())?.unwrap_or(to - Duration::days(1));
    Ok((from, to))
}

fn answer(
    result: Result<impl serde::Serialize, status_history::Error>,
) -> Result<Response, ApiError> {
    result
        .map(|body| json_response(StatusCode::OK, JSON, &body))
        .map_err(rejection)
}

async fn uptime_of(
    state: &HistoryState,
    series: Series,
    query: &WindowQuery,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    let (from, to) = window(query, history.now())?;
    answer(history.uptime(series, from, to).await)
}

/// GET `/healthcheck/dependencies/{id}/uptime`: time in each level, uptime and SLA over a
/// window.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/dependencies/{id}/uptime", tag = "history",
    params(("id" = String, Path, description = "The dependency"), crate::schema::UptimeParams),
    responses(
        (status = 200, description = "Time in each level over the window", body = crate::schema::Uptime),
        (status = 400, description = "A window that is not one: unparsable, reversed, in the future or older than kept", body = crate::schema::Error),
        (status = 404, description = "No such dependency, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn dependency(
    State(state): State<Arc<HistoryState>>,
    Path(id): Path<String>,
    Params(query): Params<WindowQuery>,
) -> Result<Response, ApiError> {
    uptime_of(&state, state.dependency(id)?, &query).await
}

/// GET `/healthcheck/groups/{name}/uptime`: the group's condition over a window.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/groups/{name}/uptime", tag = "history",
    params(("name" = String, Path, description = "The group"), crate::schema::UptimeParams),
    responses(
        (status = 200, description = "Time in each level over the window", body = crate::schema::Uptime),
        (status = 400, description = "A window that is not one", body = crate::schema::Error),
        (status = 404, description = "No such group, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn group(
    State(state): State<Arc<HistoryState>>,
    Path(name): Path<String>,
    Params(query): Params<WindowQuery>,
) -> Result<Response, ApiError> {
    uptime_of(&state, state.group(name)?, &query).await
}

/// GET `/healthcheck/uptime`: the system's condition over a window.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/uptime", tag = "history",
    params(crate::schema::UptimeParams),
    responses(
        (status = 200, description = "Time in each level over the window", body = crate::schema::Uptime),
        (status = 400, description = "A window that is not one", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn system(
    State(state): State<Arc<HistoryState>>,
    Params(query): Params<WindowQuery>,
) -> Result<Response, ApiError> {
    uptime_of(&state, Series::System, &query).await
}

/// GET `/healthcheck/report?month=YYYY-MM`: a calendar month (UTC) of the system, each
/// group and each dependency kept.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/report", tag = "history",
    params(crate::schema::ReportParams),
    responses(
        (status = 200, description = "The month of every series kept", body = crate::schema::MonthReport),
        (status = 400, description = "No such month, one not begun, or one older than kept", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn report(
    State(state): State<Arc<HistoryState>>,
    Params(query): Params<MonthQuery>,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    let now = history.now();
    let month = query
        .month
        .unwrap_or_else(|| now.format("%Y-%m").to_string());
    let bad = || {
        ApiError::bad_request(format!(
            "month must be YYYY-MM, such as 2026-11, not {month:?}"
        ))
    };
    let (year, m) = month.split_once('-').ok_or_else(bad)?;
    if year.len() != 4 || m.len() != 2 {
        return Err(bad());
    }
    let year: i32 = year.parse().map_err(|_| bad())?;
    let m: u32 = m.parse().map_err(|_| bad())?;
    if !(1..=12).contains(&m) {
        return Err(bad());
    }
    let reports = history.month(year, m).await;
    answer(reports.map(|series| json!({ "month": month, "series": series })))
}

/// Registers the history's counters: rows written, dropped, failed writes, and the
/// backlog.
#[cfg(feature = "metrics")]
pub(crate) fn register_metrics(
    history: &History,
    metrics: &mut prometheus_client::registry::Registry,
) {
    use prometheus_client::metrics::MetricType;

    use crate::live::Live;

    type Read = fn(&status_history::HistoryStats) -> u64;
    let counters: [(&str, &str, Read); 3] = [
        ("status_history_rows_written", "Rows the history store wrote", |s| s.written),
        ("status_history_dropped", "Events and rows the history dropped: a full queue, a lagging event stream, a backlog past its bound", |s| s.dropped),
        ("status_history_write_failures", "Writes of the history store that failed (each retried)", |s| s.failures),
    ];
    for (name, help, read) in counters {
        let history = history.clone();
        metrics.register(
            name,
            help,
            Live::new(MetricType::Counter, move |mut encoder| {
                encoder.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(
                    &read(&history.stats()),
                    None,
                )
            }),
        );
    }
    let history = history.clone();
    metrics.register(
        "status_history_backlog_rows",
        "Rows waiting to be written while the history store fails",
        Live::new(MetricType::Gauge, move |mut encoder| {
            encoder.encode_gauge(&i64::try_from(history.stats().backlog).unwrap_or(i64::MAX))
        }),
    );
}

impl HistoryState {
    /// The state, every act the trail records kept in `history` too (calls refused for
    /// their credentials excepted: a flood must not fill the disk), and the trail read back
    /// from it.
    pub(crate) fn new(
        registry: Registry,
        history: Option<History>,
        audit: &crate::audit::AuditLog,
        public: bool,
    ) -> Self {
        if let Some(history) = &history {
            let keeper = history.clone();
            audit.on_record(move |record| {
                if !record.unauthenticated() {
                    keeper.record_audit(record.clone());
                }
            });
            let reader = history.clone();
            audit.keep_durably(Arc::new(move |before, limit| {
                let reader = reader.clone();
                Box::pin(async move { reader.audit(before, limit).await.map_err(rejection) })
            }));
        }
        Self {
            registry,
            history,
            public,
            public_groups: Vec::new(),
            #[cfg(feature = "dashboard")]
            tiles: tiles::TileCache::default(),
        }
    }
}

/// Adds the history's routes: uptime, the report, transitions; with `dashboard`, its pages.
pub(crate) fn routes<S>(router: axum::Router<S>) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<HistoryState>: axum::extract::FromRef<S>,
{
    use axum::routing::get;
    let router = router
        .route("/healthcheck/uptime", get(system))
        .route("/healthcheck/report", get(report))
        .route("/healthcheck/dependencies/{id}/uptime", get(dependency))
        .route("/healthcheck/groups/{name}/uptime", get(group))
        .route("/healthcheck/slos", get(slos::list))
        .route("/healthcheck/slos/{name}", get(slos::one))
        .route("/healthcheck/transitions", get(transitions::system))
        .route(
            "/healthcheck/dependencies/{id}/transitions",
            get(transitions::dependency),
        )
        .route(
            "/healthcheck/groups/{name}/transitions",
            get(transitions::group),
        );
    #[cfg(feature = "dashboard")]
    let router = router
        .route("/status/history", get(page::overview))
        .route("/status/sla", get(objectives::sla_page))
        .route("/status/history/{id}", get(page::dependency));
    router
}
