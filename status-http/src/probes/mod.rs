//! The probe endpoints: detailed, summary, liveness, readiness, startup, one dependency.
//!
//! The detailed report and the summary, in each format, are serialized once per report
//! generation and served as shared bytes with a strong `ETag`; liveness once for good.

pub(crate) mod groups;
mod hot;
mod ready;

pub(crate) use self::hot::HotProbe;
use self::ready::readiness_answer;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::json;
use status_core::{
    CheckResult, DrainState, HistorySnapshot, Readiness, Registry, SystemReport, Verdict,
};

use crate::error::ApiError;
use crate::present::Presentation;
use crate::query::{Format, ProbeQuery, HEALTH_JSON};
use crate::render::{Body, Conditional, RenderCache, Rendered};
use crate::respond::json_response;
use crate::CodeMap;

pub(crate) use crate::respond::{JSON, TEXT};

/// What the probe routes share.
#[derive(Debug)]
pub(crate) struct ProbeState {
    pub(crate) registry: Registry,
    pub(crate) codes: CodeMap,
    /// How reports are shown: public view, application name.
    pub(crate) present: Presentation,
    /// The probe bodies of the current report generation.
    pub(crate) rendered: RenderCache,
    /// The liveness bodies (JSON, text), serialized once.
    pub(crate) live: [Body; 2],
    /// Liveness, readiness and startup as the core composes them: the same verdicts gRPC
    /// answers.
    pub(crate) verdicts: status_core::Probes,
    /// The bodies of passing group summaries.
    pub(crate) group_bodies: groups::GroupBodies,
    /// The groups' detailed bodies, per report generation.
    pub(crate) group_renders: groups::GroupRenders,
}

impl ProbeState {
    pub(crate) fn new(registry: Registry, codes: CodeMap, present: Presentation) -> Self {
        Self {
            live: liveness_bodies(registry.hostname()),
            verdicts: status_core::Probes::new(&registry),
            registry,
            codes,
            present,
            rendered: RenderCache::default(),
            group_bodies: groups::GroupBodies::default(),
            group_renders: groups::GroupRenders::default(),
        }
    }

    /// The code for `status`: the map's, under the registry's serve policy.
    pub(crate) fn code(&self, status: status_core::CheckStatus, strict: bool) -> StatusCode {
        self.codes
            .answer(status, self.registry.serve_policy(), strict)
    }

    /// The bodies of the current report as this router shows it.
    pub(crate) fn rendered(&self) -> Arc<Rendered> {
        let rotation = self.registry.rotation_generation();
        self.rendered
            .get(self.registry.report(), rotation, |report| {
                (self.present.report(report), self.registry.drain_state())
            })
    }

    /// The report as this router shows it, without the dependencies `query` leaves out.
    fn report_excluding(&self, query: &ProbeQuery) -> Arc<SystemReport> {
        let report = self.registry.report();
        self.present
            .report(Arc::new(report.excluding(&query.excluded())))
    }
}

#[derive(Serialize)]
struct Detailed<'a> {
    #[serde(flatten)]
    report: &'a SystemReport,
    draining: Option<&'a DrainState>,
}

pub(super) fn detailed_body(
    report: &SystemReport,
    drain: Option<&DrainState>,
    format: Format,
) -> Result<Body, ApiError> {
    match format {
        Format::Json => Body::json(
            &Detailed {
                report,
                draining: drain,
            },
            JSON,
        ),
        Format::HealthJson => Body::json(&report.health_json(), HEALTH_JSON),
        Format::Verbose => Ok(Body::new(report.verbose(), TEXT)),
    }
}

fn summary_body(
    report: &SystemReport,
    drain: Option<&DrainState>,
    format: Format,
) -> Result<Body, ApiError> {
    let summary = report.summary().draining(drain);
    match format {
        Format::Json => Body::json(&summary, JSON),
        Format::HealthJson => Body::json(&summary.health_json(), HEALTH_JSON),
        Format::Verbose => Ok(Body::new(
            format!("condition {}\n", summary.condition()),
            TEXT,
        )),
    }
}

pub(super) fn slot(format: Format) -> usize {
    match format {
        Format::Json => 0,
        Format::HealthJson => 1,
        Format::Verbose => 2,
    }
}

/// GET `/healthcheck` (served by [`HotProbe`]): the detailed report, made once per report
/// generation and format.
pub(super) fn detailed_answer(
    state: &ProbeState,
    query: &ProbeQuery,
    conditional: &Conditional,
) -> Result<Response, ApiError> {
    if !query.exclude.is_empty() {
        let report = state.report_excluding(query);
        let code = state.code(report.condition(), query.strict);
        let drain = state.registry.drain_state();
        return Ok(detailed_body(&report, drain.as_ref(), query.format)?.respond(code, conditional));
    }
    let rendered = state.rendered();
    let code = state.code(rendered.report.condition(), query.strict);
    let body = rendered.detailed[slot(query.format)]
        .get_or_init(|| detailed_body(&rendered.report, rendered.drain.as_ref(), query.format));
    Ok(body
        .as_ref()
        .map_err(Clone::clone)?
        .respond(code, conditional))
}

/// GET `/healthcheck/summary` (served by [`HotProbe`]): fails while out of rotation.
pub(super) fn summary_answer(
    state: &ProbeState,
    query: &ProbeQuery,
    conditional: &Conditional,
) -> Result<Response, ApiError> {
    let code = |report: &SystemReport, drain: Option<&DrainState>| match report
        .summary()
        .draining(drain)
        .verdict()
    {
        Verdict::Serving(condition) => state.code(condition, query.strict),
        // Out of rotation (and anything a later core may add): take it out.
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    if !query.exclude.is_empty() {
        let report = state.report_excluding(query);
        let drain = state.registry.drain_state();
        let body = summary_body(&report, drain.as_ref(), query.format)?;
        return Ok(body.respond(code(&report, drain.as_ref()), conditional));
    }
    let rendered = state.rendered();
    let body = rendered.summary[slot(query.format)]
        .get_or_init(|| summary_body(&rendered.report, rendered.drain.as_ref(), query.format));
    let code = code(&rendered.report, rendered.drain.as_ref());
    Ok(body
        .as_ref()
        .map_err(Clone::clone)?
        .respond(code, conditional))
}

/// The liveness bodies, serialized once: JSON and verbose text.
fn liveness_bodies(hostname: &str) -> [Body; 2] {
    let json = serde_json::to_vec(&json!({ "live": true, "hostname": hostname }))
        .expect("a map of a bool and a string serializes");
    [
        Body::new(json, JSON),
        Body::new("[+]ping ok\nlivez check passed\n", TEXT),
    ]
}

/// GET `/healthcheck/live` (served by [`HotProbe`]): the process serves. Never depends on
/// dependencies or on holds, but one: the culler's. An instance that culled itself answers 503
/// so that its orchestrator replaces it.
pub(super) fn live_answer(
    state: &ProbeState,
    query: &ProbeQuery,
    conditional: &Conditional,
) -> Response {
    if let Err(cull) = state.verdicts.live() {
        let body = if query.format == Format::Verbose {
            Body::new(
                format!("[-]cull failed: {}\nlivez check failed\n", cull.reason),
                TEXT,
            )
        } else {
            let json = json!({
                "live": false,
                "hostname": state.registry.hostname(),
                "culled": cull.reason,
            });
            Body::new(serde_json::to_vec(&json).expect("a map serializes"), JSON)
        };
        return body.respond(StatusCode::SERVICE_UNAVAILABLE, conditional);
    }
    let body = &state.live[usize::from(query.format == Format::Verbose)];
    body.respond(StatusCode::OK, conditional)
}

/// GET `/healthcheck/ready`: [`Registry::readiness`](status_core::Registry::readiness),
/// rendered (`?strict` fails on anything but OK, `?exclude=` leaves dependencies out).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/ready", tag = "probes", params(crate::schema::ProbeParams),
    responses(
        (status = 200, description = "Ready", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = 503, description = "OUTAGE, out of rotation, or startup not complete", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn ready(State(state): State<Arc<ProbeState>>, query: ProbeQuery) -> Response {
    // The core's one composition: a bound group's rule (a group that does not exist is not
    // ready), else the system's; then the fleet's excuse.
    let readiness: Readiness = if query.exclude.is_empty() || state.verdicts.group().is_some() {
        state.verdicts.ready(query.strict)
    } else {
        let report = state.report_excluding(&query);
        state.verdicts.ready_of(&report, query.strict)
    };
    readiness_answer(&readiness, query.format, None)
}

/// GET `/healthcheck/startup`: every polled dependency has been checked once.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/startup", tag = "probes",
    responses(
        (status = 200, description = "Every dependency has been checked", body = crate::schema::Startup),
        (status = 503, description = "Some are not checked yet", body = crate::schema::Startup),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn startup(State(state): State<Arc<ProbeState>>) -> Response {
    let startup = state.registry.startup();
    let code = if startup.complete() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(code, JSON, &startup)
}

#[derive(Serialize)]
struct DependencyBody<'a> {
    #[serde(flatten)]
    result: &'a CheckResult,
    history: HistorySnapshot,
}

/// GET `/healthcheck/dependencies/{id}`: one result with its history; its code follows its
/// status.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/healthcheck/dependencies/{id}", tag = "probes",
    params(("id" = String, Path, description = "The dependency"), crate::schema::ProbeParams),
    responses(
        (status = 200, description = "Its status answers 200", body = crate::schema::DependencyDetail),
        (status = 503, description = "Its status answers 503", body = crate::schema::DependencyDetail),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn dependency(
    State(state): State<Arc<ProbeState>>,
    Path(id): Path<String>,
    query: ProbeQuery,
) -> Result<Response, ApiError> {
    let result = state
        .registry
        .result(&id)
        .ok_or_else(|| ApiError::not_found("dependency", &id))?;
    let history = state.present.history(state.registry.history(&id)?);
    let result = state.present.result(&result);
    let code = state.code(result.status(), query.strict);
    Ok(json_response(
        code,
        JSON,
        &DependencyBody {
            result: &result,
            history,
        },
    ))
}

/// The probes' routes, a balancer's hot path: the summary, liveness and group summaries as
/// hand-written services ([`HotProbe`]), and a static path for each group registered by now
/// (matched without extracting a parameter; later ones are served by the parameterised one).
pub(crate) fn routes<S>(
    state: &Arc<ProbeState>,
    registry: &status_core::Registry,
) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<ProbeState>: axum::extract::FromRef<S>,
{
    use axum::routing::{get, get_service};
    let hot = axum::Router::new()
        .route(
            "/healthcheck",
            get_service(HotProbe::detailed(Arc::clone(state))),
        )
        .route(
            "/healthcheck/summary",
            get_service(HotProbe::summary(Arc::clone(state))),
        )
        .route(
            "/healthcheck/live",
            get_service(HotProbe::live(Arc::clone(state))),
        )
        .route("/healthcheck/ready", get(ready))
        .route("/healthcheck/groups/{name}", get(groups::group))
        .route(
            "/healthcheck/groups/{name}/summary",
            get_service(HotProbe::group_summary(Arc::clone(state))),
        )
        .route("/healthcheck/startup", get(startup));
    registry.groups().iter().fold(hot, |hot, group| {
        hot.route(
            &format!("/healthcheck/groups/{}/summary", group.group().name()),
            get_service(HotProbe::group_summary(Arc::clone(state))),
        )
    })
}
