//! The operators' view of the subscribers: who is subscribed, and removing one (a
//! complaint, an address that bounces). Behind the admin token, in the audit trail.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use chrono::SecondsFormat;
use serde_json::{json, Value};
use status_history::Subscriber;
use status_http_core::history::{kept, rejection};

use crate::auth::Admin;
use crate::error::ApiError;
use crate::respond::{json_response, JSON};
use crate::StatusPageState;

/// A subscriber as an operator reads it: its address in full, and never its token.
fn subscriber_json(s: &Subscriber) -> Value {
    let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
    json!({
        "id": s.id,
        "kind": s.kind.as_str(),
        "address": s.address,
        "components": s.components,
        "lang": s.lang,
        "created": at(s.created),
        "confirmed": s.confirmed.map(at),
    })
}

/// GET `/admin/subscribers`: every subscriber, confirmed or not, by id.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/admin/subscribers", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "Every subscriber, by id (never a token)", body = crate::schema::SubscriberList),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn list(
    _: Admin,
    State(state): State<Arc<StatusPageState>>,
) -> Result<Response, ApiError> {
    let history = kept(state.history.as_ref())?;
    let all = history.subscribers().await.map_err(rejection)?;
    let all: Vec<Value> = all.iter().map(subscriber_json).collect();
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &json!({ "subscribers": all }),
    ))
}

/// DELETE `/admin/subscribers/{id}`: removes a subscriber and what it was sent; it is told
/// nothing more.
#[cfg_attr(feature = "openapi", utoipa::path(delete, path = "/admin/subscribers/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = i64, Path, minimum = 1, description = "The subscriber")),
    responses(
        (status = 200, description = "The subscriber, removed", body = crate::schema::SubscriberEntry),
        (status = 400, description = "An id that is not one", body = crate::schema::Error),
        (status = 404, description = "No such subscriber, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available: nothing is removed", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn remove(
    _: Admin,
    State(state): State<Arc<StatusPageState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = crate::admin::positive_id("a subscriber", &id)?;
    let history = kept(state.history.as_ref())?;
    let removed = history
        .remove_subscriber(id)
        .await
        .map_err(rejection)?
        .ok_or_else(|| ApiError::not_found("subscriber", &id.to_string()))?;
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &subscriber_json(&removed),
    ))
}
