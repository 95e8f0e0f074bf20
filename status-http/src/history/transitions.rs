//! Transitions as data: `GET /healthcheck/dependencies/{id}/transitions`, and the same for
//! groups and the system. Newest first, a page at a time; a dependency's messages follow
//! the public view as `/healthcheck/dependencies/{id}` does.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use status_core::CheckStatus;
use status_history::{Series, TransitionRecord};

use super::{rejection, time_param, HistoryState};
use crate::error::ApiError;
use crate::query::{number, Params};
use crate::respond::{json_response, JSON};

/// The most transitions one page lists, and how many when not asked.
const MAX_PAGE: usize = 500;
const DEFAULT_PAGE: usize = 100;

/// One transition as the route answers it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    at: String,
    from: Option<CheckStatus>,
    to: CheckStatus,
    blocked_by: Vec<String>,
    message: String,
}

/// A page of transitions.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    kind: &'static str,
    name: String,
    transitions: Vec<Shown>,
    /// The `to` of the next (older) page; `None` on the last.
    next_to: Option<String>,
}

fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `?from=&to=&limit=`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    from: Option<String>,
    to: Option<String>,
    limit: Option<String>,
}

/// A page of `series`' transitions, as the query asks.
async fn page(
    state: &HistoryState,
    series: Series,
    query: PageQuery,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    let now = history.now();
    let from = time_param("from", query.from.as_deref())?;
    let to = time_param("to", query.to.as_deref())?;
    if let (Some(from), Some(to)) = (from, to) {
        if to <= from {
            return Err(ApiError::bad_request("`to` must be after `from`"));
        }
    }
    if from.is_some_and(|from| from > now) {
        return Err(ApiError::bad_request("`from` is in the future"));
    }
    let limit = number("limit", query.limit.as_deref(), DEFAULT_PAGE, 1, MAX_PAGE)?;
    let to_ms = to.map_or(i64::MAX, |t| t.timestamp_millis());
    // One more than the page, to know whether there is another.
    let mut records = history
        .transitions_between(
            &series,
            from.unwrap_or(DateTime::<Utc>::MIN_UTC),
            to.unwrap_or(DateTime::<Utc>::MAX_UTC),
            limit + 1,
        )
        .await
        .map_err(rejection)?;
    let next_to = if records.len() > limit {
        records.truncate(limit);
        let oldest = records.last().map_or(to_ms, |t| t.at);
        // The next page ends with the oldest millisecond here: records of one millisecond
        // are all on one page, never split between two (unless one millisecond fills a
        // whole page: the next then starts before it).
        if records.iter().any(|t| t.at != oldest) {
            records.retain(|t| t.at != oldest);
            Some(rfc3339(oldest + 1))
        } else {
            Some(rfc3339(oldest))
        }
    } else {
        None
    };
    let body = Page {
        kind: series.kind(),
        name: series.name().to_owned(),
        transitions: records.into_iter().map(|t| shown(state, t)).collect(),
        next_to,
    };
    Ok(json_response(StatusCode::OK, JSON, &body))
}

/// A transition as shown: in the public view a failure's message is its level, as a
/// result's is.
fn shown(state: &HistoryState, t: TransitionRecord) -> Shown {
    let message = if state.public && t.to != CheckStatus::Ok {
        t.to.to_string()
    } else {
        t.message
    };
    Shown {
        at: rfc3339(t.at),
        from: t.from,
        to: t.to,
        blocked_by: t.blocked_by,
        message,
    }
}

/// GET `/healthcheck/dependencies/{id}/transitions`: the dependency's changes of level.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/dependencies/{id}/transitions", tag = "history",
    params(("id" = String, Path, description = "The dependency"), crate::schema::TransitionParams),
    responses(
        (status = 200, description = "A page of transitions, newest first", body = crate::schema::TransitionPage),
        (status = 400, description = "A window or limit that is not one", body = crate::schema::Error),
        (status = 404, description = "No such dependency, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn dependency(
    State(state): State<Arc<HistoryState>>,
    Path(id): Path<String>,
    Params(query): Params<PageQuery>,
) -> Result<Response, ApiError> {
    page(&state, state.dependency(id)?, query).await
}

/// GET `/healthcheck/groups/{name}/transitions`: the group's changes of condition.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/groups/{name}/transitions", tag = "history",
    params(("name" = String, Path, description = "The group"), crate::schema::TransitionParams),
    responses(
        (status = 200, description = "A page of transitions, newest first", body = crate::schema::TransitionPage),
        (status = 400, description = "A window or limit that is not one", body = crate::schema::Error),
        (status = 404, description = "No such group, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn group(
    State(state): State<Arc<HistoryState>>,
    Path(name): Path<String>,
    Params(query): Params<PageQuery>,
) -> Result<Response, ApiError> {
    page(&state, state.group(name)?, query).await
}

/// GET `/healthcheck/transitions`: the system's changes of condition.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/transitions", tag = "history",
    params(crate::schema::TransitionParams),
    responses(
        (status = 200, description = "A page of transitions, newest first", body = crate::schema::TransitionPage),
        (status = 400, description = "A window or limit that is not one", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn system(
    State(state): State<Arc<HistoryState>>,
    Params(query): Params<PageQuery>,
) -> Result<Response, ApiError> {
    page(&state, Series::System, query).await
}
