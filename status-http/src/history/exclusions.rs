//! Exclusions over HTTP: `POST`, `GET /admin/exclusions` and `DELETE
//! /admin/exclusions/{id}`, audited as every admin call is. An exclusion marks a past window
//! of a dependency or a group as planned maintenance: its time counts as neither good nor
//! bad in objectives, uptime and SLA reports, and the page's day tiles show it as
//! maintenance.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use status_history::NewExclusion;

use super::{rejection, time_param, HistoryState};
use crate::auth::Admin;
use crate::body::AdminBody;
use crate::error::ApiError;
use crate::respond::{json_response, JSON};
use status_http_core::audit::with_actor;
use status_http_core::query::positive_id;

/// The body of a POST: a dependency or a group, the window, why, maybe who.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExcludeRequest {
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    dependency: Option<String>,
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    group: Option<String>,
    from: String,
    to: String,
    reason: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    actor: Option<String>,
}

/// POST `/admin/exclusions`: marks a past window as planned maintenance.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/admin/exclusions", tag = "admin", security(("bearer" = [])),
    request_body = crate::schema::ExcludeRequest,
    responses(
        (status = 201, description = "The exclusion, kept: its window rounded down to the buckets kept at its start", body = crate::schema::Exclusion),
        (status = 400, description = "A malformed exclusion, or a window reversed, in the future, older than kept or shorter than a bucket: nothing is kept", body = crate::schema::Error),
        (status = 404, description = "An unknown dependency or group, or no history kept: nothing is kept", body = crate::schema::Error),
        (status = 409, description = "It overlaps another exclusion of the same target: nothing is kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available: nothing is kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn exclude(
    admin: Admin,
    State(state): State<Arc<HistoryState>>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    let request: ExcludeRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    let series = match (request.dependency, request.group) {
        (Some(id), None) => state.dependency(id)?,
        (None, Some(name)) => state.group(name)?,
        _ => {
            return Err(ApiError::bad_request(
                "an exclusion names one `dependency` or one `group`",
            ))
        }
    };
    let from = time_param("from", Some(&request.from))?.unwrap_or_default();
    let to = time_param("to", Some(&request.to))?.unwrap_or_default();
    let kept = history
        .exclude(&NewExclusion {
            series,
            from,
            to,
            reason: request.reason,
            actor: Some(admin.operator().to_owned()),
        })
        .await
        .map_err(rejection)?;
    let said = format!(
        "exclusion {} of {} from {} to {}: {}",
        kept.id,
        kept.series,
        kept.from.to_rfc3339(),
        kept.to.to_rfc3339(),
        kept.reason
    );
    Ok(with_actor(
        json_response(StatusCode::CREATED, JSON, &kept),
        kept.actor.clone(),
        Some(said),
    ))
}

/// GET `/admin/exclusions`: every exclusion, the oldest window first.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/exclusions", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "Every exclusion kept, the oldest window first", body = crate::schema::ExclusionList),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn list(
    _: Admin,
    State(state): State<Arc<HistoryState>>,
) -> Result<Response, ApiError> {
    let all = state.history()?.exclusions().await.map_err(rejection)?;
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({ "exclusions": all }),
    ))
}

/// DELETE `/admin/exclusions/{id}`: removes an exclusion; its window counts again.
#[cfg_attr(feature = "openapi", utoipa::path(delete, path = "/admin/exclusions/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The exclusion")),
    responses(
        (status = 200, description = "The exclusion, removed", body = crate::schema::Exclusion),
        (status = 400, description = "An id that is not one", body = crate::schema::Error),
        (status = 404, description = "No such exclusion, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn remove(
    _: Admin,
    State(state): State<Arc<HistoryState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = positive_id("an exclusion", &id)?;
    let removed = state
        .history()?
        .remove_exclusion(id)
        .await
        .map_err(rejection)?
        .ok_or_else(|| ApiError::not_found("exclusion", &id.to_string()))?;
    Ok(with_actor(
        json_response(StatusCode::OK, JSON, &removed),
        None,
        Some(format!("exclusion {id} removed: {}", removed.reason)),
    ))
}
