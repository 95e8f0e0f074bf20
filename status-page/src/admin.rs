//! The incidents' admin API: `GET /admin/incidents` (every detail, for operators) and
//! `POST /admin/incidents/{id}/updates` (an operator's word, audited). Without a history
//! they answer 404.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use status_history::incident::{Incident, IncidentUpdate, Postmortem, UpdateStatus};

use super::json::time;
use super::StatusPageState;
use crate::auth::Admin;
use crate::body::AdminBody;
use crate::error::ApiError;
use crate::query::{number, Params};
use crate::respond::{json_response, JSON};
use status_http_core::audit::with_actor;
use status_http_core::history::{about, kept, rejection, DaysQuery};

/// The body of a POST: a status, a message, maybe an actor.
#[derive(Deserialize)]
struct UpdateRequest {
    status: String,
    message: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    actor: Option<String>,
}

/// The body of a PUT of a postmortem: its text, maybe an actor.
#[derive(Deserialize)]
struct PostmortemRequest {
    body: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default, deserialize_with = "status_http_core::body::present")]
    actor: Option<String>,
}

fn postmortem_json(p: &Postmortem) -> serde_json::Value {
    json!({ "body": p.body, "at": time(p.at), "actor": p.actor })
}

fn update_json(u: &IncidentUpdate) -> serde_json::Value {
    json!({
        "id": u.id,
        "at": time(u.at),
        "status": u.status,
        "message": u.message,
        "actor": u.actor,
        "kind": u.kind,
    })
}

/// An incident as operators read it: root causes, every dependency it covered and its worst
/// level, every update as written.
fn incident_json(i: &Incident) -> serde_json::Value {
    json!({
        "id": i.id,
        "title": i.title,
        "status": i.status(),
        "impact": i.impact,
        "roots": i.roots,
        "affected": i.affected,
        "started": time(i.started),
        "resolved": i.resolved.map(time),
        "updated": time(i.updated),
        "updates": i.updates.iter().map(update_json).collect::<Vec<_>>(),
        "postmortem": i.postmortem.as_ref().map(postmortem_json),
    })
}

/// The most updates an incident takes (but for one that resolves it): the page, its JSON
/// and its feeds show them all.
const MAX_UPDATES: usize = 100;

pub(crate) use status_http_core::query::positive_id;

/// Incident `id`, read from `history`; a 404 when there is none.
async fn incident(history: &status_history::History, id: i64) -> Result<Incident, ApiError> {
    history
        .incident(id)
        .await
        .map_err(rejection)?
        .ok_or_else(|| ApiError::not_found("incident", &id.to_string()))
}

/// GET `/admin/incidents`: incidents open and of the last `days` days (14; at most 400), with
/// what they cover, their root causes and every update: what the public page says, and what
/// it does not.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/incidents", tag = "admin", security(("bearer" = [])),
    params(("days" = Option<i64>, Query, nullable = false, minimum = 1, maximum = 400, description = "How far back resolved incidents go (14)")),
    responses(
        (status = 200, description = "Incidents, the latest started first", body = crate::schema::IncidentList),
        (status = 400, description = "days out of 1 to 400", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn list(
    _: Admin,
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<DaysQuery>,
) -> Result<Response, ApiError> {
    let days = number("days", query.days.as_deref(), 14, 1, 400)?;
    let history = kept(state.history.as_ref())?;
    let since = history.now() - chrono::Duration::days(days);
    let incidents = history.incidents(since, 500).await.map_err(rejection)?;
    let incidents: Vec<_> = incidents.iter().map(incident_json).collect();
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({ "incidents": incidents }),
    ))
}

/// POST `/admin/incidents/{id}/updates`: posts an update (`investigating`, `identified`,
/// `monitoring`, `resolved`) with a message, shown on the page and in the JSON at once;
/// `resolved` resolves the incident.
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/admin/incidents/{id}/updates", tag = "admin", security(("bearer" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The incident")),
    request_body = crate::schema::IncidentUpdateRequest,
    responses(
        (status = 201, description = "The update, kept", body = crate::schema::IncidentUpdate),
        (status = 400, description = "A malformed update, or an id that is not one: nothing is kept", body = crate::schema::Error),
        (status = 404, description = "No such incident, or no history kept", body = crate::schema::Error),
        (status = 409, description = "The incident has 100 updates, the most one takes (but for one that resolves it): nothing is kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available: nothing is kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn post(
    admin: Admin,
    State(state): State<Arc<StatusPageState>>,
    Path(id): Path<String>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    let id = positive_id("an incident", &id)?;
    let history = kept(state.history.as_ref())?;
    let request: UpdateRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    let status = UpdateStatus::parse(&request.status).ok_or_else(|| {
        ApiError::bad_request(format!(
            "status must be investigating, identified, monitoring or resolved, not {:?}",
            request.status
        ))
    })?;
    // The page, its JSON and its feeds show every update: bounded, but for the word that
    // resolves the incident.
    if status != UpdateStatus::Resolved {
        let incident = incident(history, id).await?;
        if incident.updates.len() >= MAX_UPDATES {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "incident {id} has {} updates, the most one takes; resolve it, or open \
                     another; nothing is kept",
                    incident.updates.len()
                ),
            ));
        }
    }
    let update = history
        .post_update(id, status, &request.message, Some(admin.operator()))
        .await
        .map_err(about("incident", id))?;
    Ok(with_actor(
        json_response(StatusCode::CREATED, JSON, &update_json(&update)),
        update.actor.clone(),
        Some(format!("{}: {}", status.as_str(), update.message)),
    ))
}

/// PUT `/admin/incidents/{id}/postmortem`: publishes what was learned from a resolved
/// incident, shown under it on the page, in the JSON (`postmortem_body`,
/// `postmortem_published_at`) and in the feeds; a second PUT replaces it.
#[cfg_attr(feature = "openapi", utoipa::path(put, path = "/admin/incidents/{id}/postmortem", tag = "admin", security(("bearer" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The incident")),
    request_body = crate::schema::PostmortemRequest,
    responses(
        (status = 200, description = "The postmortem, kept and published", body = crate::schema::Postmortem),
        (status = 400, description = "A malformed postmortem, or an id that is not one: nothing is kept", body = crate::schema::Error),
        (status = 404, description = "No such incident, or no history kept", body = crate::schema::Error),
        (status = 409, description = "The incident is not resolved, or not public (the page does not show it): nothing is kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available: nothing is kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn postmortem(
    admin: Admin,
    State(state): State<Arc<StatusPageState>>,
    Path(id): Path<String>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    let id = positive_id("an incident", &id)?;
    let history = kept(state.history.as_ref())?;
    let request: PostmortemRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    // A postmortem shows under a public incident: of one the page does not show, it would
    // show nowhere.
    let incident = incident(history, id).await?;
    if !state
        .publication
        .shows(&incident, history.now().timestamp_millis())
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "incident {id} is not public (the page does not show it): post an update to \
                 publish it, then its postmortem; nothing is kept"
            ),
        ));
    }
    let kept = history
        .post_postmortem(id, &request.body, Some(admin.operator()))
        .await
        .map_err(about("incident", id))?;
    let first_line = kept.body.lines().next().unwrap_or_default();
    Ok(with_actor(
        json_response(StatusCode::OK, JSON, &postmortem_json(&kept)),
        kept.actor.clone(),
        Some(format!("postmortem of incident {id}: {first_line}")),
    ))
}
