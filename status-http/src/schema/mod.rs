//! The types that describe the contract's JSON bodies in the OpenAPI document.
//!
//! The core's types serialize by hand, so these mirror what goes on the wire, field for
//! field. A leaf: handlers name these in their `#[utoipa::path]`, and nothing here names a
//! handler or the document ([`openapi`](crate::openapi) sits on top of both).

// The types below are never built: they only describe JSON for the document.
#![allow(dead_code)]

use std::collections::BTreeMap;

use utoipa::{IntoParams, ToSchema};

/// A system or dependency status, best first.
#[derive(ToSchema)]
#[schema(as = Status)]
pub(crate) enum Status {
    #[schema(rename = "OK")]
    Ok,
    #[schema(rename = "MINOR")]
    Minor,
    #[schema(rename = "MAJOR")]
    Major,
    #[schema(rename = "OUTAGE")]
    Outage,
}

/// How much the system needs a dependency.
#[derive(ToSchema)]
pub(crate) enum Urgency {
    #[schema(rename = "REQUIRED")]
    Required,
    #[schema(rename = "STRONG")]
    Strong,
    #[schema(rename = "WEAK")]
    Weak,
    #[schema(rename = "NONE")]
    None,
}

pub(crate) use status_http_core::schema::Error;

/// One dependency's latest result.
#[derive(ToSchema)]
#[schema(as = Result)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CheckResultDoc {
    id: String,
    status: Status,
    description: String,
    error_message: String,
    /// Milliseconds since the Unix epoch.
    timestamp: i64,
    /// Milliseconds.
    duration: i64,
    last_known_good_timestamp: i64,
    /// Milliseconds between two checks.
    period: i64,
    urgency: Urgency,
    #[serde(rename = "type")]
    kind: String,
    service_pool: String,
    documentation_url: String,
    date: String,
    /// The error chain, when the check raised one (detailed view only).
    #[schema(nullable = false)]
    thrown: Option<Vec<String>>,
    blocked_by: Vec<String>,
    flapping: bool,
    stale: bool,
    consecutive_failures: i64,
    /// The mute in force, if any (detailed view only).
    #[schema(nullable = false)]
    mute: Option<Mute>,
}

/// The detailed report: Indeed's names, results keyed by status, worst first.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    condition: Status,
    /// `FAILOVER` on OUTAGE, else `OK`.
    dc_status: String,
    hostname: String,
    appname: String,
    duration: i64,
    timestamp: i64,
    least_recently_executed_timestamp: i64,
    least_recently_executed_date: Option<String>,
    results: BTreeMap<String, Vec<CheckResultDoc>>,
    draining: Option<Drain>,
}

/// The summary: `condition` first, no dependency detail.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Summary {
    condition: Status,
    dc_status: String,
    hostname: String,
    duration: i64,
    appname: String,
    timestamp: i64,
    #[schema(nullable = false)]
    draining: Option<Drain>,
}

/// The IETF `application/health+json` form.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HealthJson {
    /// `pass`, `warn` or `fail`.
    status: String,
    service_id: String,
    description: String,
    #[schema(nullable = false)]
    output: Option<String>,
    /// Keyed `<id>:status` (detailed report only).
    #[schema(nullable = false)]
    checks: Option<BTreeMap<String, Vec<Object>>>,
}

/// Liveness.
#[derive(ToSchema)]
pub(crate) struct Live {
    live: bool,
    hostname: String,
    /// Why the instance culled itself (503 only).
    #[schema(nullable = false)]
    culled: Option<String>,
}

/// Readiness.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Ready {
    /// For a group's summary: the group.
    #[schema(nullable = false)]
    group: Option<String>,
    ready: bool,
    condition: Status,
    startup_complete: bool,
    draining: Option<Drain>,
    reasons: Vec<String>,
    /// With fleet-aware readiness, the rule that answered: `instance` or `fleet`.
    #[schema(nullable = false)]
    rule: Option<String>,
}

/// Startup.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Startup {
    startup_complete: bool,
    /// Dependencies not checked yet.
    pending: Vec<String>,
}

/// One reason the instance is out of rotation.
#[derive(ToSchema)]
pub(crate) struct Hold {
    /// `operator`, `shutdown` or `cull`.
    source: String,
    reason: String,
    actor: Option<String>,
    since: String,
    until: Option<String>,
}

/// Whether the instance is out of rotation, and why.
#[derive(ToSchema)]
pub(crate) struct Drain {
    draining: bool,
    #[schema(nullable = false)]
    reason: Option<String>,
    actor: Option<String>,
    #[schema(nullable = false)]
    since: Option<String>,
    until: Option<String>,
    holds: Vec<Hold>,
    /// On `DELETE /admin/drain`: whether the operator's hold was in force.
    #[serde(rename = "wasDraining")]
    #[schema(nullable = false)]
    was_draining: Option<bool>,
}

/// A feature and why it is on or off.
#[derive(ToSchema)]
pub(crate) struct Feature {
    name: String,
    description: String,
    enabled: bool,
    automatic: bool,
    reason: String,
    requirements: Vec<Object>,
    #[serde(rename = "override")]
    over: Option<Object>,
    since: String,
    #[schema(nullable = false)]
    flips: Option<Vec<Object>>,
}

/// `GET /features`.
#[derive(ToSchema)]
pub(crate) struct FeatureList {
    features: Vec<Feature>,
}

/// Any JSON object.
#[derive(ToSchema)]
pub(crate) struct Object {}

/// `PUT /features/{name}/override`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OverrideRequest {
    enabled: bool,
    /// 1 to 604800.
    #[schema(minimum = 1, maximum = 604_800)]
    ttl_seconds: i64,
    #[serde(flatten)]
    why: OperatorText,
}

/// `PUT /admin/drain`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DrainRequest {
    /// 1 to 604800.
    #[schema(minimum = 1, maximum = 604_800)]
    ttl_seconds: i64,
    #[serde(flatten)]
    why: OperatorText,
}

/// Why an operator acts, and who.
#[derive(ToSchema)]
pub(crate) struct OperatorText {
    /// Not blank (invisible characters count as blank), no control characters (C0, DEL, C1,
    /// line and paragraph separators, bidirectional controls), at most 1024 characters.
    #[schema(
        min_length = 1,
        max_length = 1024,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b-\\u200f\\u2060-\\u2064\\u206a-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0][^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    reason: String,
    /// Accepted and not read: the actor is the operator whose token makes the call.
    #[schema(pattern = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$")]
    actor: Option<String>,
}

/// One dependency with its history.
#[derive(ToSchema)]
pub(crate) struct DependencyDetail {
    #[serde(flatten)]
    result: CheckResultDoc,
    history: Object,
}

/// How a probe wants its answer.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ProbeParams {
    /// `json`, `health+json` or `text`.
    #[param(
        nullable = false,
        pattern = "^(json|health[+ ]json|health|text|verbose)$"
    )]
    format: Option<String>,
    /// Kubernetes-style text lines: `true`, `1`, `yes` or empty (a bare `?verbose`), or
    /// `false`, `0`, `no`.
    #[param(nullable = false, pattern = "^(|true|false|1|0|yes|no)$")]
    verbose: Option<String>,
    /// Comma-separated dependencies to leave out (at most 256).
    #[param(nullable = false)]
    exclude: Option<String>,
    /// 503 for anything but OK: `true`, `1`, `yes` or empty (a bare `?strict`), or `false`,
    /// `0`, `no`.
    #[param(nullable = false, pattern = "^(|true|false|1|0|yes|no)$")]
    strict: Option<String>,
}

mod admin;
pub(crate) use admin::*;
#[cfg(feature = "history")]
mod history;
#[cfg(feature = "history")]
pub(crate) use history::*;
