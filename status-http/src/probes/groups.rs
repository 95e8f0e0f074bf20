//! Probe groups over HTTP: `GET /healthcheck/groups/{name}` (detailed, as `/healthcheck`)
//! and `GET /healthcheck/groups/{name}/summary` (200 or 503 by the group's rule).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use status_core::CheckStatus;

use super::ready::readiness_answer;
use super::{detailed_body, ProbeState};
use crate::error::ApiError;
use crate::query::ProbeQuery;
use crate::render::Conditional;

/// GET `/healthcheck/groups/{name}`: the group's members and its condition, in every format
/// and with every option of `/healthcheck`; 503 when its condition fails its rule (with
/// `strict`, anything but OK).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/groups/{name}", tag = "probes",
    params(("name" = String, Path, description = "The group"), crate::schema::ProbeParams),
    responses(
        (status = 200, description = "The group's condition passes its rule", content((crate::schema::Report = "application/json"), (crate::schema::HealthJson = "application/health+json"), (String = "text/plain"))),
        (status = 503, description = "The group's condition fails its rule (or is not OK, with `strict`)", content((crate::schema::Report = "application/json"), (crate::schema::HealthJson = "application/health+json"), (String = "text/plain"))),
        (status = 304, description = "The body the `If-None-Match` names is current"),
        (status = 404, description = "No such group", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn group(
    State(state): State<Arc<ProbeState>>,
    Path(name): Path<String>,
    query: ProbeQuery,
    conditional: Conditional,
) -> Result<Response, ApiError> {
    let unknown = || ApiError::not_found("group", &name);
    let rule = state.registry.group(&name).ok_or_else(unknown)?;
    let mut report = state.registry.group_report(&name).ok_or_else(unknown)?;
    if !query.exclude.is_empty() {
        report = Arc::new(report.excluding(&query.excluded()));
    }
    let report = state.present.report(report);
    let condition = report.condition();
    let fails = if query.strict {
        condition != CheckStatus::Ok
    } else {
        rule.group().fails(condition)
    };
    let code = if fails {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let drain = rule
        .group()
        .rotation()
        .then(|| state.registry.drain_state())
        .flatten();
    Ok(detailed_body(&report, drain.as_ref(), query.format)?.respond(code, &conditional))
}

/// GET `/healthcheck/groups/{name}/summary`: whether the group passes by its rule (its
/// condition; and, as the group says, holds and startup), as readiness answers: 200 or 503,
/// with the reasons.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/groups/{name}/summary", tag = "probes",
    params(("name" = String, Path, description = "The group"), crate::schema::ProbeParams),
    responses(
        (status = 200, description = "The group passes its rule", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = 503, description = "The group fails its rule: its condition, a rotation hold or startup, as the group counts them", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = 404, description = "No such group", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn group_summary(
    State(state): State<Arc<ProbeState>>,
    Path(name): Path<String>,
    query: ProbeQuery,
) -> Result<Response, ApiError> {
    let readiness = state
        .registry
        .group_readiness(&name, query.strict)
        .ok_or_else(|| ApiError::not_found("group", &name))?;
    Ok(readiness_answer(&readiness, query.format, Some(&name)))
}
