//! Probe groups over HTTP: `GET /healthcheck/groups/{name}` (detailed, as `/healthcheck`)
//! and `GET /healthcheck/groups/{name}/summary` (200 or 503 by the group's rule).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use status_core::CheckStatus;

use super::ready::{readiness_answer, ready_body};
use super::{detailed_body, ProbeState};
use crate::error::ApiError;
use crate::query::{Format, ProbeQuery};
use crate::render::{Body, Conditional};

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
        (status = 304, description = "The body the `If-None-Match` names is current"),
        (status = 503, description = "The group fails its rule: its condition, a rotation hold or startup, as the group counts them", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = 404, description = "No such group", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn group_summary(
    State(state): State<Arc<ProbeState>>,
    Path(name): Path<String>,
    query: ProbeQuery,
    conditional: Conditional,
) -> Result<Response, ApiError> {
    let readiness = state
        .registry
        .group_readiness(&name, query.strict)
        .ok_or_else(|| ApiError::not_found("group", &name))?;
    if !readiness.ready() {
        return Ok(readiness_answer(&readiness, query.format, Some(&name)));
    }
    // Passing, the answer says only the group, its condition and the format: made once.
    let key = (name, query.format, readiness.condition());
    let cached = state.group_bodies.get(&key);
    let body = cached.unwrap_or_else(|| {
        let body = ready_body(&readiness, query.format, &key.0);
        state.group_bodies.insert(key, body.clone());
        body
    });
    Ok(body.respond(StatusCode::OK, &conditional))
}

/// The bodies of passing group summaries, by group, format and condition.
#[derive(Debug, Default)]
pub(crate) struct GroupBodies(RwLock<HashMap<(String, Format, CheckStatus), Body>>);

impl GroupBodies {
    fn get(&self, key: &(String, Format, CheckStatus)) -> Option<Body> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    fn insert(&self, key: (String, Format, CheckStatus), body: Body) {
        let mut bodies = self.0.write().unwrap_or_else(PoisonError::into_inner);
        // Bounded by the groups, three formats and three passing conditions; a group name
        // that does not exist never gets here.
        bodies.insert(key, body);
    }
}
