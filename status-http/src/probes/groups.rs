//! Probe groups over HTTP: `GET /healthcheck/groups/{name}` (detailed, as `/healthcheck`)
//! and `GET /healthcheck/groups/{name}/summary` (200 or 503 by the group's rule).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use status_core::CheckStatus;

use super::ready::{readiness_answer, ready_body};
use super::{detailed_body, slot, ProbeState};
use crate::error::ApiError;
use crate::query::{Format, ProbeQuery};
use crate::render::{Body, Conditional, RenderCache};
use crate::sync::{read, write};

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
    let group = rule.group();
    let code = |condition: CheckStatus| {
        let fails = if query.strict {
            condition != CheckStatus::Ok
        } else {
            group.fails(condition)
        };
        if fails {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        }
    };
    let drain = || {
        group
            .rotation()
            .then(|| state.registry.drain_state())
            .flatten()
    };
    if !query.exclude.is_empty() {
        let report = state.registry.group_report(&name).ok_or_else(unknown)?;
        let report = state
            .present
            .report(Arc::new(report.excluding(&query.excluded())));
        let body = detailed_body(&report, drain().as_ref(), query.format)?;
        return Ok(body.respond(code(report.condition()), &conditional));
    }
    // Made once per report generation and group, as `/healthcheck`'s bodies are.
    let rendered = state.group_renders.of(&name).get(
        state.registry.report(),
        state.registry.rotation_generation(),
        |report| {
            // Its members as the registry's facts hold them: not selected again here.
            let facts = state.registry.facts();
            let members = facts
                .group(&name)
                .map(status_core::GroupFacts::members)
                .unwrap_or_default();
            let members = report.only(|r| members.contains(r.id()));
            (state.present.report(Arc::new(members)), drain())
        },
    );
    let body = rendered.detailed[slot(query.format)]
        .get_or_init(|| detailed_body(&rendered.report, rendered.drain.as_ref(), query.format));
    Ok(body
        .as_ref()
        .map_err(Clone::clone)?
        .respond(code(rendered.report.condition()), &conditional))
}

/// The detailed bodies of each group, made once per report generation (only groups that
/// exist get an entry).
#[derive(Debug, Default)]
pub(crate) struct GroupRenders(RwLock<HashMap<String, Arc<RenderCache>>>);

impl GroupRenders {
    fn of(&self, name: &str) -> Arc<RenderCache> {
        if let Some(cache) = read(&self.0).get(name) {
            return Arc::clone(cache);
        }
        let mut caches = write(&self.0);
        Arc::clone(caches.entry(name.to_owned()).or_default())
    }
}

/// GET `/healthcheck/groups/{name}/summary` (served by [`HotProbe`](super::HotProbe)):
/// whether the group passes by its rule (its condition; and, as the group says, holds and
/// startup), as readiness answers: 200 or 503, with the reasons. A passing answer is bytes
/// made once per group, format and condition.
pub(super) fn summary_answer(
    state: &ProbeState,
    name: &str,
    query: &ProbeQuery,
    conditional: &Conditional,
) -> Result<Response, ApiError> {
    let readiness = state
        .registry
        .group_readiness(name, query.strict)
        .ok_or_else(|| ApiError::not_found("group", name))?;
    if !readiness.ready() {
        return Ok(readiness_answer(&readiness, query.format, Some(name)));
    }
    let condition = readiness.condition();
    let body = match state.group_bodies.get(name, query.format, condition) {
        Some(body) => body,
        None => {
            let body = ready_body(&readiness, query.format, name);
            state
                .group_bodies
                .insert(name, query.format, condition, body.clone());
            body
        }
    };
    Ok(body.respond(StatusCode::OK, conditional))
}

/// The bodies of passing group summaries: per group, by format and condition.
#[derive(Debug, Default)]
pub(crate) struct GroupBodies(RwLock<HashMap<String, Bodies>>);

/// One group's: by format, then by the severity of a condition.
type Bodies = [[Option<Body>; 4]; 3];

fn slots(format: Format, condition: CheckStatus) -> (usize, usize) {
    let format = match format {
        Format::Json => 0,
        Format::HealthJson => 1,
        Format::Verbose => 2,
    };
    (format, usize::from(condition.severity()))
}

impl GroupBodies {
    fn get(&self, name: &str, format: Format, condition: CheckStatus) -> Option<Body> {
        let (f, c) = slots(format, condition);
        let bodies = read(&self.0);
        bodies.get(name)?[f][c].clone()
    }

    /// Bounded: only a registered group's passing answer gets here.
    fn insert(&self, name: &str, format: Format, condition: CheckStatus, body: Body) {
        let (f, c) = slots(format, condition);
        let mut bodies = write(&self.0);
        bodies.entry(name.to_owned()).or_default()[f][c] = Some(body);
    }
}
