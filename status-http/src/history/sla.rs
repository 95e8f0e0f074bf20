//! The SLA report over HTTP: `GET /admin/reports/sla?from=&to=&format=json|csv`, a row per
//! dependency, group and objective; CSV as RFC 4180 says (one header row, CRLF).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Duration;
use serde_json::json;

use super::{rejection, time_param, HistoryState};
use crate::auth::Admin;
use crate::error::ApiError;
use crate::query::Params;
use crate::respond::{json_response, JSON};

/// `?from=&to=&format=`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlaQuery {
    from: Option<String>,
    to: Option<String>,
    format: Option<String>,
}

impl HistoryState {
    /// The SLA report over `from` to `to` as a query gives them (`to` now and `from` 30
    /// days before it when not given), each group's members read from the registry: the
    /// window asked, and the rows or why the history could not give them.
    pub(crate) async fn sla_rows(
        &self,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Result<
        (
            chrono::DateTime<chrono::Utc>,
            chrono::DateTime<chrono::Utc>,
            Result<Vec<status_history::sla::SlaRow>, status_history::Error>,
        ),
        ApiError,
    > {
        let history = self.history()?;
        let to = time_param("to", to)?.unwrap_or_else(|| history.now());
        let from = time_param("from", from)?.unwrap_or(to - Duration::days(30));
        let facts = self.registry.facts();
        let members = |group: &str| {
            facts
                .group(group)
                .map(|g| {
                    g.members()
                        .iter()
                        .map(|id| id.as_str().to_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok((from, to, history.sla_report(from, to, members).await))
    }
}

/// GET `/admin/reports/sla`: the SLA report over a window (`to` now and `from` 30 days
/// before it, when not given).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/reports/sla", tag = "admin", security(("bearer" = [])),
    params(crate::schema::SlaParams),
    responses(
        (status = 200, description = "A row per dependency, group and objective: as JSON, or as RFC 4180 CSV with `format=csv`", body = crate::schema::SlaReport),
        (status = 400, description = "A window that is not one, or an unknown format", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn report(
    _: Admin,
    State(state): State<Arc<HistoryState>>,
    Params(query): Params<SlaQuery>,
) -> Result<Response, ApiError> {
    state.history()?;
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format is json or csv, not {:?}",
                other.chars().take(16).collect::<String>()
            )))
        }
    };
    let (from, to, rows) = state
        .sla_rows(query.from.as_deref(), query.to.as_deref())
        .await?;
    let rows = rows.map_err(rejection)?;
    if csv {
        let name = format!(
            "attachment; filename=\"sla-{}-{}.csv\"",
            from.format("%Y%m%d"),
            to.format("%Y%m%d")
        );
        return Ok((
            StatusCode::OK,
            [
                (
                    header::CONTENT_TYPE,
                    "text/csv; charset=utf-8; header=present".to_owned(),
                ),
                (header::CONTENT_DISPOSITION, name),
            ],
            status_history::sla::to_csv(&rows),
        )
            .into_response());
    }
    let (from, to) = rows.first().map_or((from, to), |r| (r.from, r.to));
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({
            "from": from.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "to": to.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "rows": rows,
        }),
    ))
}
