//! Service level objectives over HTTP: `GET /healthcheck/slos` and
//! `/healthcheck/slos/{name}`, and their gauges in `/metrics`. In the public view an
//! objective whose target is not public (a dependency not tagged `public`, a group the page
//! does not show) is not listed, and its name answers 404 as an unknown one does.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use status_history::objective::SloReport;
use status_history::Series;

use super::{rejection, HistoryState};
use crate::error::ApiError;
use crate::respond::{json_response, JSON};

/// The tag that makes a dependency public (status-page's `PUBLIC_TAG`, which this crate
/// has only with the feature `page`).
const PUBLIC_TAG: &str = "public";

impl HistoryState {
    /// Whether `target` may be shown: always, but in the public view only the system, a
    /// dependency tagged `public` and a group the page shows.
    pub(crate) fn shows(&self, target: &Series) -> bool {
        if !self.public {
            return true;
        }
        match target {
            Series::System => true,
            Series::Dependency(id) => self
                .registry
                .result(id)
                .is_some_and(|r| r.info().tags().iter().any(|t| t == PUBLIC_TAG)),
            Series::Group(name) => self.public_groups.iter().any(|g| g == name),
        }
    }
}

/// GET `/healthcheck/slos`: every objective declared, from the durable history and the live
/// run.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/slos", tag = "history",
    responses(
        (status = 200, description = "Every objective: bad time, budget, burn rates and alerts", body = crate::schema::Slos),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn list(State(state): State<Arc<HistoryState>>) -> Result<Response, ApiError> {
    let history = state.history()?;
    let reports: Vec<SloReport> = history
        .slos()
        .await
        .map_err(rejection)?
        .into_iter()
        .filter(|r| state.shows(r.target()))
        .collect();
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({ "slos": reports }),
    ))
}

/// GET `/healthcheck/slos/{name}`: one objective.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/slos/{name}", tag = "history",
    params(("name" = String, Path, description = "The objective")),
    responses(
        (status = 200, description = "The objective: bad time, budget, burn rates and alerts", body = crate::schema::Slo),
        (status = 404, description = "No such objective, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn one(
    State(state): State<Arc<HistoryState>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    let unknown = || ApiError::not_found("objective", &name);
    if !history
        .objectives()
        .iter()
        .any(|o| o.name() == name && state.shows(o.target()))
    {
        return Err(unknown());
    }
    let report = history
        .slo_named(&name)
        .await
        .map_err(rejection)?
        .ok_or_else(unknown)?;
    Ok(json_response(StatusCode::OK, JSON, &report))
}

/// Registers the objectives' gauges, from their last reports (read every 15 s):
/// `status_slo_burn_rate{slo,window}` (absent for a window with nothing observed),
/// `status_slo_error_budget_remaining_ratio{slo}` and `status_slo_alert_firing{slo,severity}`.
#[cfg(feature = "metrics")]
pub(crate) fn register_metrics(
    history: &status_history::History,
    metrics: &mut prometheus_client::registry::Registry,
) {
    use prometheus_client::metrics::MetricType;
    use status_history::objective::{Severity, BURN_WINDOWS};

    use crate::live::Live;

    let h = history.clone();
    metrics.register(
        "status_slo_burn_rate",
        "The bad share of the observed time over a window, over what the objective allows (1 - objective)",
        Live::new(MetricType::Gauge, move |mut encoder| {
            for r in h.last_slos() {
                for w in BURN_WINDOWS {
                    if let Some(rate) = r.burn_rate(w.name) {
                        encoder
                            .encode_family(&[("slo", r.name()), ("window", w.name)])?
                            .encode_gauge(&rate)?;
                    }
                }
            }
            Ok(())
        }),
    );
    let h = history.clone();
    metrics.register(
        "status_slo_error_budget_remaining_ratio",
        "What is left of the objective's error budget over its window: 1 untouched, 0 spent, below 0 overspent",
        Live::new(MetricType::Gauge, move |mut encoder| {
            for r in h.last_slos() {
                encoder
                    .encode_family(&[("slo", r.name())])?
                    .encode_gauge(&r.budget.remaining)?;
            }
            Ok(())
        }),
    );
    let h = history.clone();
    metrics.register(
        "status_slo_alert_firing",
        "Whether a burn-rate alert of the severity fires for the objective (the SRE workbook's multiwindow rules)",
        Live::new(MetricType::Gauge, move |mut encoder| {
            for r in h.last_slos() {
                for severity in [Severity::Page, Severity::Ticket] {
                    encoder
                        .encode_family(&[("slo", r.name()), ("severity", severity.as_str())])?
                        .encode_gauge(&i64::from(r.firing(severity)))?;
                }
            }
            Ok(())
        }),
    );
}
