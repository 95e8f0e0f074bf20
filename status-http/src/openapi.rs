//! The OpenAPI description of the HTTP contract, served at `/openapi.json`.
//!
//! Each operation is declared on its handler with `#[utoipa::path]`; the bodies are described
//! by the mirror types of [`schema`](crate::schema). This module sits on top: it names every
//! handler, and no handler names it. `tests/router/openapi.rs` checks every
//! route of the router against this document, and the test command runs schemathesis against
//! the quickstart with it.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "status",
        description = "Dependency health: probes for load balancers, Kubernetes and GSLB; \
                       features gated on dependencies; operator overrides; metrics."
    ),
    paths(
        detailed,
        summary,
        live,
        crate::probes::ready,
        crate::probes::startup,
        crate::probes::groups::group,
        group_summary,
        crate::probes::dependency,
        crate::admin::refresh,
        crate::admin::features,
        crate::admin::feature,
        crate::admin::set_override,
        crate::admin::clear_override,
        crate::admin::drain,
        crate::admin::undrain,
        crate::trail::audit,
        crate::mutes::mute,
        crate::mutes::unmute,
        crate::mutes::mutes,
        openapi_json,
    ),
    modifiers(&Bearer),
    tags(
        (name = "probes", description = "For load balancers, Kubernetes and GSLB"),
        (name = "features", description = "Features gated on dependencies"),
        (name = "admin", description = "Operator actions: bearer token required"),
        (name = "operators", description = "Dashboard and metrics"),
        (name = "fleet", description = "Every instance and data center, and the data-center endpoint GSLB asks"),
    )
)]
pub(crate) struct ApiDoc;

// Each feature's routes, merged into the document when the feature is on.
#[cfg(feature = "metrics")]
#[derive(OpenApi)]
#[openapi(paths(crate::metrics::metrics))]
struct MetricsDoc;

#[cfg(feature = "dashboard")]
#[derive(OpenApi)]
#[openapi(paths(
    crate::dashboard::page,
    crate::dashboard::events,
    crate::dashboard::asset
))]
struct DashboardDoc;

#[cfg(feature = "fleet")]
#[derive(OpenApi)]
#[openapi(paths(
    crate::fleet::fleet,
    crate::fleet::datacenter,
    crate::fleet::dependencies
))]
struct FleetDoc;

#[cfg(all(feature = "fleet", feature = "dashboard"))]
#[derive(OpenApi)]
#[openapi(paths(crate::fleet::page::page))]
struct FleetPageDoc;

#[cfg(feature = "history")]
#[derive(OpenApi)]
#[openapi(
    paths(
        crate::history::dependency,
        crate::history::group,
        crate::history::system,
        crate::history::report,
        crate::history::slos::list,
        crate::history::exclusions::exclude,
        crate::history::exclusions::list,
        crate::history::exclusions::remove,
        crate::history::sla::report,
        crate::history::slos::one,
        crate::trail::history_audit,
        crate::history::transitions::dependency,
        crate::history::transitions::group,
        crate::history::transitions::system
    ),
    tags((name = "history", description = "Uptime and SLA over any window, kept across restarts"))
)]
struct HistoryDoc;

#[cfg(all(feature = "history", feature = "dashboard"))]
#[derive(OpenApi)]
#[openapi(paths(
    crate::history::page::overview,
    crate::history::page::dependency,
    crate::history::objectives::sla_page
))]
struct HistoryPageDoc;

fn assembled() -> utoipa::openapi::OpenApi {
    #[allow(unused_mut)]
    let mut doc = ApiDoc::openapi();
    #[cfg(feature = "metrics")]
    doc.merge(MetricsDoc::openapi());
    #[cfg(feature = "dashboard")]
    doc.merge(DashboardDoc::openapi());
    #[cfg(feature = "fleet")]
    doc.merge(FleetDoc::openapi());
    #[cfg(all(feature = "fleet", feature = "dashboard"))]
    doc.merge(FleetPageDoc::openapi());
    #[cfg(feature = "history")]
    doc.merge(HistoryDoc::openapi());
    #[cfg(all(feature = "history", feature = "dashboard"))]
    doc.merge(HistoryPageDoc::openapi());
    #[cfg(feature = "page")]
    doc.merge(status_page::openapi());
    doc
}

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document as JSON, made once.
pub(crate) fn document() -> &'static str {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOCUMENT.get_or_init(|| {
        assembled()
            .to_json()
            .expect("the OpenAPI document serializes")
    })
}

/// GET `/openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operators",
    responses((status = 200, description = "The OpenAPI 3.1 description of this API",
               content_type = "application/json", body = Object))
)]
pub(crate) async fn openapi_json() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static(crate::respond::JSON),
        )],
        document(),
    )
        .into_response()
}

// The detailed report, liveness, the summary and a group's summary are served by a
// hand-written service (`probes::HotProbe`), not a handler: their operations are declared on
// these, never called.

/// GET `/healthcheck`: the detailed report.
#[utoipa::path(get, path = "/healthcheck", tag = "probes", params(crate::schema::ProbeParams),
    responses(
        (status = 200, description = "OK, MINOR or MAJOR", content((crate::schema::Report = "application/json"), (crate::schema::HealthJson = "application/health+json"), (String = "text/plain"))),
        (status = 503, description = "OUTAGE (or anything but OK with `strict`)", content((crate::schema::Report = "application/json"), (crate::schema::HealthJson = "application/health+json"), (String = "text/plain"))),
        (status = 304, description = "The body the `If-None-Match` names is current"),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error)))]
#[allow(dead_code)]
fn detailed() {}

/// GET `/healthcheck/summary`: fails while out of rotation.
#[utoipa::path(get, path = "/healthcheck/summary", tag = "probes", params(crate::schema::ProbeParams),
    responses(
        (status = 200, description = "In rotation, not OUTAGE", content((crate::schema::Summary = "application/json"), (crate::schema::HealthJson = "application/health+json"), (String = "text/plain"))),
        (status = 503, description = "OUTAGE, or out of rotation", content((crate::schema::Summary = "application/json"), (crate::schema::HealthJson = "application/health+json"), (String = "text/plain"))),
        (status = 304, description = "The body the `If-None-Match` names is current"),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error)))]
#[allow(dead_code)]
fn summary() {}

/// GET `/healthcheck/live`: the process serves. Never depends on dependencies or on holds,
/// but one: the culler's. An instance that culled itself answers 503 so that its
/// orchestrator replaces it.
#[utoipa::path(get, path = "/healthcheck/live", tag = "probes", params(crate::schema::ProbeParams),
    responses(
        (status = 200, description = "The process serves", content((crate::schema::Live = "application/json"), (String = "text/plain"))),
        (status = 503, description = "The instance culled itself (it took a token of the fleet's budget): replace it", content((crate::schema::Live = "application/json"), (String = "text/plain"))),
        (status = 304, description = "The body the `If-None-Match` names is current"),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error)))]
#[allow(dead_code)]
fn live() {}

/// GET `/healthcheck/groups/{name}/summary` (served by `probes::HotProbe`): whether the group
/// passes by its rule (its condition; and, as the group says, holds and startup), as
/// readiness answers: 200 or 503, with the reasons.
#[utoipa::path(get, path = "/healthcheck/groups/{name}/summary", tag = "probes",
    params(("name" = String, Path, description = "The group"), crate::schema::ProbeParams),
    responses(
        (status = 200, description = "The group passes its rule", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = 304, description = "The body the `If-None-Match` names is current"),
        (status = 503, description = "The group fails its rule: its condition, a rotation hold or startup, as the group counts them", content((crate::schema::Ready = "application/json"), (String = "text/plain"))),
        (status = 404, description = "No such group", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 405, 408, 413, 414, 431)", body = crate::schema::Error)))]
#[allow(dead_code)]
fn group_summary() {}
