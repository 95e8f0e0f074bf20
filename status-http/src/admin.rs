//! Features, overrides, drain and manual refresh.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::json;
use status_core::{FeatureFlip, FeatureOverride, FeatureState};

use crate::auth::Admin;
use crate::body::AdminBody;
use crate::error::ApiError;
use crate::present::Presentation;
use crate::respond::{json_response, JSON};
pub(crate) use status_http_core::audit::with_actor;

/// What the admin and feature routes share (the token is [`AdminAuth`](crate::AdminAuth),
/// its own sub-state).
#[derive(Debug)]
pub(crate) struct AdminState {
    pub(crate) registry: status_core::Registry,
    /// How a refreshed result is shown.
    pub(crate) present: Presentation,
}

/// GET `/features`.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/features", tag = "features",
    responses(
        (status = 200, description = "Every feature", body = crate::schema::FeatureList),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn features(State(state): State<Arc<AdminState>>) -> Response {
    json_response(
        StatusCode::OK,
        JSON,
        &json!({ "features": state.registry.features() }),
    )
}

#[derive(Serialize)]
struct FeatureBody {
    #[serde(flatten)]
    state: FeatureState,
    flips: Vec<FeatureFlip>,
}

/// GET `/features/{name}`: the state and the latest flips.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/features/{name}", tag = "features",
    params(("name" = String, Path, description = "The feature")),
    responses(
        (status = 200, description = "The feature and its latest flips", body = crate::schema::Feature),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn feature(
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let flips = state.registry.feature_flips(&name)?;
    let handle = state
        .registry
        .feature(&name)
        .ok_or_else(|| ApiError::not_found("feature", &name))?;
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &FeatureBody {
            state: handle.state(),
            flips,
        },
    ))
}

/// A whole number of seconds, written `60` or `60.0` (JSON has one number type, and JSON
/// Schema counts `60.0` as an integer).
pub(crate) fn whole_seconds<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<u64, D::Error> {
    let seconds = f64::deserialize(deserializer)?;
    if seconds.fract() != 0.0 || !(0.0..=9.0e15).contains(&seconds) {
        return Err(serde::de::Error::custom(format!(
            "ttlSeconds must be a whole number of seconds, not {seconds}"
        )));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(seconds as u64)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OverrideRequest {
    enabled: bool,
    #[serde(deserialize_with = "whole_seconds")]
    ttl_seconds: u64,
    reason: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default)]
    actor: Option<String>,
}

/// PUT `/features/{name}/override`: force on or off for `ttlSeconds` with `reason`.
#[cfg_attr(feature = "openapi", utoipa::path(put, path = "/features/{name}/override", tag = "admin", security(("bearer" = [])),
    params(("name" = String, Path, description = "The feature")),
    request_body = crate::schema::OverrideRequest,
    responses(
        (status = 200, description = "The feature, overridden", body = crate::schema::Feature),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn set_override(
    admin: Admin,
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    if state.registry.feature(&name).is_none() {
        return Err(ApiError::not_found("feature", &name));
    }
    let request: OverrideRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    let reason = request.reason.trim().to_owned();
    let mut over = FeatureOverride::new(
        request.enabled,
        Duration::from_secs(request.ttl_seconds),
        request.reason,
    )?;
    // The operator whose token made the call, never what the body claims.
    let actor = Some(admin.operator().to_owned());
    over = over.actor(admin.operator());
    let feature = state.registry.override_feature(&name, &over)?;
    tracing::info!(feature = %name, enabled = feature.enabled, "feature overridden");
    Ok(with_actor(
        json_response(StatusCode::OK, JSON, &feature),
        actor,
        Some(reason),
    ))
}

/// DELETE `/features/{name}/override`. A body, if any, is ignored (but still bounded).
#[cfg_attr(feature = "openapi", utoipa::path(delete, path = "/features/{name}/override", tag = "admin", security(("bearer" = [])),
    params(("name" = String, Path, description = "The feature")),
    responses(
        (status = 200, description = "The feature, back to automatic", body = crate::schema::Feature),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn clear_override(
    _: Admin,
    State(state): State<Arc<AdminState>>,
    Path(name): Path<String>,
    _: AdminBody,
) -> Result<Response, ApiError> {
    let feature = state.registry.clear_override(&name)?;
    tracing::info!(feature = %name, "feature override cleared");
    Ok(json_response(StatusCode::OK, JSON, &feature))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DrainRequest {
    #[serde(deserialize_with = "whole_seconds")]
    ttl_seconds: u64,
    reason: String,
    // Checked as before, and not otherwise read: the actor is the operator whose token made
    // the call.
    #[serde(default)]
    actor: Option<String>,
}

/// PUT `/admin/drain`: fail readiness and summary for `ttlSeconds` with `reason`.
#[cfg_attr(feature = "openapi", utoipa::path(put, path = "/admin/drain", tag = "admin", security(("bearer" = [])),
    request_body = crate::schema::DrainRequest,
    responses(
        (status = 200, description = "Out of rotation", body = crate::schema::Drain),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn drain(
    admin: Admin,
    State(state): State<Arc<AdminState>>,
    body: AdminBody,
) -> Result<Response, ApiError> {
    let request: DrainRequest = body.parse()?;
    status_http_core::audit::claimed(request.actor.as_deref())?;
    let drain = state.registry.drain(
        &request.reason,
        Some(Duration::from_secs(request.ttl_seconds)),
        Some(admin.operator()),
    )?;
    tracing::warn!(reason = %drain.reason, "instance draining");
    let actor = Some(admin.operator().to_owned());
    Ok(with_actor(
        json_response(StatusCode::OK, JSON, &drain),
        actor,
        Some(drain.reason.clone()),
    ))
}

/// DELETE `/admin/drain`: ends the operator's hold only; a shutdown's or a cull's stays, and
/// the answer says so (`draining` stays true while any hold is in force). A body may name
/// the `actor` who ends it (for the audit trail); anything else in it is ignored (but still
/// bounded).
#[cfg_attr(feature = "openapi", utoipa::path(delete, path = "/admin/drain", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, description = "The operator's hold ended; `draining` says whether another holds", body = crate::schema::Drain),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn undrain(
    admin: Admin,
    State(state): State<Arc<AdminState>>,
    body: AdminBody,
) -> Response {
    // The body is bounded and otherwise ignored: who ends it is the token's operator.
    let _ = body;
    let actor = Some(admin.operator().to_owned());
    // An operator ends it (the holder of the token), never the application.
    let was_draining = state.registry.undrain_by(actor.as_deref());
    if was_draining {
        tracing::info!("operator drain ended");
    }
    let holds = state.registry.holds();
    with_actor(
        json_response(
            StatusCode::OK,
            JSON,
            &json!({ "draining": !holds.is_empty(), "wasDraining": was_draining, "holds": holds }),
        ),
        actor,
        None,
    )
}

/// POST `/healthcheck/dependencies/{id}/refresh`: check now, answer with the fresh result. A
/// body, if any, is ignored (but still bounded).
#[cfg_attr(feature = "openapi", utoipa::path(post, path = "/healthcheck/dependencies/{id}/refresh", tag = "admin", security(("bearer" = [])),
    params(("id" = String, Path, description = "The dependency")),
    responses(
        (status = 200, description = "The fresh result", body = crate::schema::CheckResultDoc),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn refresh(
    _: Admin,
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    _: AdminBody,
) -> Result<Response, ApiError> {
    let result = state.registry.refresh(&id).await?;
    Ok(json_response(
        StatusCode::OK,
        JSON,
        &*state.present.result(&result),
    ))
}
