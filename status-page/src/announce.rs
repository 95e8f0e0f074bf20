//! Maintenances announced to the public: `POST`, `GET /admin/maintenances`, `DELETE
//! /admin/maintenances/{id}`. An announcement is the act that publishes a maintenance: it
//! is kept in the history (a restart loses none, a fleet shows one list), shown on the page,
//! in `scheduled-maintenances.json` and the feeds, and mutes the dependencies it covers for
//! its window. A mute alone silences and publishes nothing.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;
use status_core::MuteWindow;
use status_history::{Announcement, NewAnnouncement};

use super::json::at;
use super::StatusPageState;
use crate::auth::Admin;
use crate::body::AdminBody;
use crate::error::ApiError;
use crate::respond::{json_response, JSON};
use status_http_core::audit::with_actor;
use status_http_core::history::{about, kept, rejection};

/// The body of a POST: a title and a message for customers, the dependencies it covers,
/// its window, maybe an actor.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnnounceRequest {
    title: String,
    message: String,
    dependencies: Vec<String>,
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    start: Option<String>,
    end: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    actor: Option<String>,
}

fn rfc3339(what: &str, text: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| ApiError::bad_request(format!("{what} is not an RFC 3339 time: {e}")))
}

fn announcement_json(a: &Announcement) -> serde_json::Value {
    json!({
        "id": a.id,
        "title": a.title,
        "message": a.body,
        "dependencies": a.dependencies,
        "start": at(a.start),
        "end": at(a.until),
        "created": at(a.created),
        "actor": a.actor,
        "cancelled": a.cancelled.map(at),
    })
}

/// POST `/admin/maintenances`: announces a maintenance to the public and mutes what it
/// covers for its window.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/admin/maintenances", tag = "admin", security(("bearer" = [])),
    request_body = crate::schema::AnnounceRequest,
    responses(
        (status = 201, description = "The maintenance, kept, published, and its dependencies muted for its window", body = crate::schema::Announcement),
        (status = 400, description = "A malformed announcement: nothing is kept or muted", body = crate::schema::Error),
        (status = 409, description = "A dependency is muted now and the maintenance starts later (it would end that mute): nothing is kept or muted", body = crate::schema::Error),
        (status = 404, description = "An unknown dependency, or no history kept: nothing is kept or muted", body = crate::schema::Error),
        (status = 503, description = "The history store is not available: nothing is kept or muted", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn announce(
    admin: Admin,
    State(state): State<Arc<StatusPageState>>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    let history = kept(state.history.as_ref())?;
    let request: AnnounceRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    let now = history.now();
    let start = match &request.start {
        Some(start) => rfc3339("start", start)?,
        None => now,
    };
    let until = rfc3339("end", &request.end)?;
    for id in &request.dependencies {
        if !state.registry.contains(id) {
            return Err(ApiError::not_found("dependency", id));
        }
    }
    let ahead = (until - now).to_std().unwrap_or_default();
    if ahead > status_core::MAX_MUTE_AHEAD {
        return Err(ApiError::bad_request(format!(
            "a maintenance ends within {} days",
            status_core::MAX_MUTE_AHEAD.as_secs() / 86_400
        )));
    }
    let asked = NewAnnouncement {
        title: request.title,
        body: request.message,
        dependencies: request.dependencies,
        start,
        until,
        actor: Some(admin.operator().to_owned()),
    };
    // Everything is checked before anything is kept or muted: a mute in force that a window
    // starting later would end is refused by the registry, so the whole maintenance is.
    if asked.start > now {
        for id in &asked.dependencies {
            if let Some(mute) = state.registry.muted(id) {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!(
                        "{id} is muted until {} ({}): a maintenance that starts later would end \
                         that mute now; unmute it first, or announce one that starts now; \
                         nothing is kept",
                        mute.until
                            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        mute.reason
                    ),
                ));
            }
        }
    }
    history.check_announcement(&asked).map_err(rejection)?;
    let kept = history.announce(&asked).await.map_err(rejection)?;
    let window = MuteWindow::Between {
        start: kept.start,
        end: kept.until,
    };
    let mut not_muted = Vec::new();
    for id in &kept.dependencies {
        if let Err(e) = state
            .registry
            .mute(id, window, &kept.title, kept.actor.as_deref())
        {
            tracing::warn!(dependency = %id, "a maintenance announced could not mute it: {e}");
            not_muted.push(json!({ "dependency": id, "error": e.to_string() }));
        }
    }
    let mut body = announcement_json(&kept);
    body["notMuted"] = json!(not_muted);
    Ok(with_actor(
        json_response(StatusCode::CREATED, JSON, &body),
        kept.actor.clone(),
        Some(format!("maintenance {}: {}", kept.id, kept.title)),
    ))
}

/// GET `/admin/maintenances`: the maintenances announced, in force, ahead or of the last 90
/// days, called off or not, the soonest first.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/maintenances", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "Maintenances announced, the soonest first", body = crate::schema::AnnouncementList),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn list(
    _: Admin,
    State(state): State<Arc<StatusPageState>>,
) -> Result<Response, ApiError> {
    let history = kept(state.history.as_ref())?;
    let since = history.now() - chrono::Duration::days(super::feed::FEED_DAYS);
    let all = history.announcements(since).await.map_err(rejection)?;
    let all: Vec<_> = all.iter().map(announcement_json).collect();
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({ "maintenances": all }),
    ))
}

/// DELETE `/admin/maintenances/{id}`: calls a maintenance off (it leaves the page, and the
/// mutes it set for its window are lifted).
#[cfg_attr(feature = "openapi", utoipa::path(delete, path = "/admin/maintenances/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The maintenance")),
    responses(
        (status = 200, description = "The maintenance, called off", body = crate::schema::Announcement),
        (status = 400, description = "An id that is not one", body = crate::schema::Error),
        (status = 404, description = "No such maintenance, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn cancel(
    _: Admin,
    State(state): State<Arc<StatusPageState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = crate::admin::positive_id("a maintenance", &id)?;
    let history = kept(state.history.as_ref())?;
    let cancelled = history
        .cancel_announcement(id)
        .await
        .map_err(about("maintenance", id))?;
    // Lift the mutes it set: those of its window still in force (an operator's own mute of
    // another window is left alone).
    for dependency in &cancelled.dependencies {
        let mine = state
            .registry
            .muted(dependency)
            .is_some_and(|m| m.until == cancelled.until && m.reason == cancelled.title);
        if mine {
            let _ = state.registry.unmute(dependency);
        }
    }
    Ok(with_actor(
        json_response(StatusCode::OK, JSON, &announcement_json(&cancelled)),
        None,
        Some(format!("maintenance {id} called off: {}", cancelled.title)),
    ))
}
