//! Mutes and maintenance windows: `PUT`, `DELETE /admin/mutes/{dependency}`, `GET
//! /admin/mutes`. A muted dependency is still checked and shown; it sends no notice.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use status_core::MuteWindow;

use crate::admin::{with_actor, AdminState};
use crate::auth::Admin;
use crate::body::AdminBody;
use crate::error::ApiError;
use crate::respond::{json_response, JSON};

/// The body of a PUT: `ttlSeconds`, or `start` and `end`; a reason; maybe an actor.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MuteRequest {
    #[serde(default, deserialize_with = "some_whole_seconds")]
    ttl_seconds: Option<u64>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    reason: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default)]
    actor: Option<String>,
}

fn some_whole_seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    crate::admin::whole_seconds(d).map(Some)
}

impl MuteRequest {
    /// The window it asks for.
    fn window(&self) -> Result<MuteWindow, ApiError> {
        match (self.ttl_seconds, &self.start, &self.end) {
            (Some(ttl), None, None) => Ok(MuteWindow::For(Duration::from_secs(ttl))),
            (None, Some(start), Some(end)) => Ok(MuteWindow::Between {
                start: rfc3339("start", start)?,
                end: rfc3339("end", end)?,
            }),
            _ => Err(ApiError::bad_request(
                "give either ttlSeconds, or start and end (RFC 3339), not both",
            )),
        }
    }
}

fn rfc3339(what: &str, text: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| ApiError::bad_request(format!("{what} is not an RFC 3339 time: {e}")))
}

/// PUT `/admin/mutes/{dependency}`: mutes it for `ttlSeconds`, or from `start` to `end`.
#[cfg_attr(feature = "openapi", utoipa::path(put, path = "/admin/mutes/{dependency}", tag = "admin", security(("bearer" = [])),
    params(("dependency" = String, Path, description = "The dependency")),
    request_body = crate::schema::MuteRequest,
    responses(
        (status = 200, description = "The mute, in force or scheduled", body = crate::schema::Mute),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 409, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn mute(
    admin: Admin,
    State(state): State<Arc<AdminState>>,
    Path(dependency): Path<String>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    if !state.registry.contains(&dependency) {
        return Err(ApiError::not_found("dependency", &dependency));
    }
    let request: MuteRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    let window = request.window()?;
    let mute = state
        .registry
        .mute(&dependency, window, &request.reason, Some(admin.operator()))?;
    Ok(with_actor(
        json_response(StatusCode::OK, JSON, &mute),
        mute.actor.clone(),
        Some(mute.reason.clone()),
    ))
}

/// DELETE `/admin/mutes/{dependency}`: ends its mute, in force or scheduled. A body, if any,
/// is ignored (but still bounded).
#[cfg_attr(feature = "openapi", utoipa::path(delete, path = "/admin/mutes/{dependency}", tag = "admin", security(("bearer" = [])),
    params(("dependency" = String, Path, description = "The dependency")),
    responses(
        (status = 200, description = "Unmuted; `wasMuted` says whether it was", body = crate::schema::Unmuted),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn unmute(
    _: Admin,
    State(state): State<Arc<AdminState>>,
    Path(dependency): Path<String>,
    _: AdminBody,
) -> Result<Response, ApiError> {
    let ended = state.registry.unmute(&dependency)?;
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({ "dependency": dependency, "wasMuted": ended.is_some(), "mute": ended }),
    ))
}

/// GET `/admin/mutes`: every mute in force or scheduled.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/mutes", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "Every mute in force or scheduled, by dependency", body = crate::schema::MuteList),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn mutes(_: Admin, State(state): State<Arc<AdminState>>) -> Response {
    json_response(
        StatusCode::OK,
        JSON,
        &json!({ "mutes": state.registry.mutes(), "max": status_core::MAX_MUTES }),
    )
}
