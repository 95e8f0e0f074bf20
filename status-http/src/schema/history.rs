//! The bodies of the history routes.

use utoipa::{IntoParams, ToSchema};

/// A window: RFC 3339 times; `to` defaults to now, `from` to a day before `to`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct UptimeParams {
    /// The window's start (RFC 3339), widened down to the buckets read.
    #[param(nullable = false, format = DateTime)]
    from: Option<String>,
    /// The window's end (RFC 3339), widened up to the buckets read.
    #[param(nullable = false, format = DateTime)]
    to: Option<String>,
}

/// A window and a page of transitions.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TransitionParams {
    /// Transitions at or after this time (RFC 3339); all kept when not given.
    #[param(nullable = false, format = DateTime)]
    from: Option<String>,
    /// Transitions before this time (RFC 3339; the previous page's `nextTo`); now when not
    /// given.
    #[param(nullable = false, format = DateTime)]
    to: Option<String>,
    /// At most this many (100 when not given, at most 500).
    #[param(nullable = false, minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// A change of level, as kept.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Transition {
    /// When (RFC 3339, milliseconds).
    #[schema(format = DateTime)]
    at: String,
    /// The level before; null for the first after a start.
    from: Option<crate::schema::Status>,
    /// The level after.
    to: crate::schema::Status,
    /// The failing dependencies it waited on.
    blocked_by: Vec<String>,
    /// The check's message (empty for the system and groups; a failure's level in the
    /// public view).
    message: String,
}

/// A page of transitions, newest first.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TransitionPage {
    /// `system`, `dependency` or `group`.
    kind: String,
    /// The dependency or group; empty for the system.
    name: String,
    transitions: Vec<Transition>,
    /// The `to` of the next (older) page; null on the last.
    #[schema(format = DateTime)]
    next_to: Option<String>,
}

/// A calendar month.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ReportParams {
    /// `YYYY-MM` (UTC); this month when not given.
    #[param(nullable = false, pattern = "^[0-9]{4}-(0[1-9]|1[0-2])$")]
    month: Option<String>,
}

/// Milliseconds in each level while not muted, and muted.
#[derive(ToSchema)]
pub(crate) struct Spent {
    ok: u64,
    minor: u64,
    major: u64,
    outage: u64,
    /// Muted or in a maintenance window, whatever the level: left out of uptime and SLA.
    muted: u64,
}

/// What a millisecond in each level counts toward the SLA.
#[derive(ToSchema)]
pub(crate) struct Weights {
    ok: f64,
    minor: f64,
    major: f64,
    outage: f64,
}

/// Check durations, in milliseconds.
#[derive(ToSchema)]
pub(crate) struct Durations {
    min: f64,
    mean: f64,
    max: f64,
}

/// Time in each level over a window, uptime and SLA.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Uptime {
    /// `system`, `dependency` or `group`.
    kind: String,
    /// The dependency or group; empty for the system.
    name: String,
    /// The window read (RFC 3339).
    from: String,
    to: String,
    /// `minute`, `hour` or `day`: the buckets read.
    resolution: String,
    /// Milliseconds observed and not muted.
    observed_ms: u64,
    spent_ms: Spent,
    /// The share of observed time not in OUTAGE; null with none observed.
    uptime: Option<f64>,
    /// The weighted share; null with none observed.
    sla: Option<f64>,
    weights: Weights,
    checks: u64,
    failures: u64,
    duration_ms: Option<Durations>,
}

/// A calendar month of every series kept.
#[derive(ToSchema)]
pub(crate) struct MonthReport {
    /// `YYYY-MM`.
    month: String,
    /// The system, each group, each dependency.
    series: Vec<Uptime>,
}

/// Every objective declared.
#[derive(ToSchema)]
pub(crate) struct Slos {
    slos: Vec<Slo>,
}

/// A service level objective: bad time, its error budget, burn rates and alerts.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Slo {
    /// Its name.
    name: String,
    /// `system`, `dependency:ID` or `group:NAME`.
    target: String,
    /// The share of observed time that must be good (0.999).
    objective: f64,
    /// The rolling window, as written (`30d`).
    window: String,
    /// The level from which time is bad: `MINOR`, `MAJOR` or `OUTAGE`.
    bad_from: String,
    /// When it was read (RFC 3339).
    #[schema(format = DateTime)]
    at: String,
    /// Milliseconds observed over the window: not muted, not excluded.
    observed_ms: u64,
    /// Of those, bad.
    bad_ms: u64,
    budget: SloBudget,
    /// The burn rate over `5m`, `30m`, `1h`, `6h`, `1d` and `3d`: the bad share of the time
    /// observed in it over `1 - objective`; null with nothing observed.
    burn_rates: std::collections::BTreeMap<String, Option<f64>>,
    /// The workbook's alerts: page at 14.4 over 1h and 5m, page at 6 over 6h and 30m,
    /// ticket at 1 over 3d and 6h.
    alerts: Vec<SloAlert>,
}

/// The error budget over the objective's window.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SloBudget {
    /// `(1 - objective) × observed`, whole milliseconds.
    allowed_ms: u64,
    /// Bad milliseconds.
    spent_ms: u64,
    /// What is left, as a share of the budget: 1 untouched, 0 spent, below 0 overspent.
    remaining: f64,
}

/// A burn-rate alert as it stands.
#[derive(ToSchema)]
pub(crate) struct SloAlert {
    /// `page` or `ticket`.
    severity: String,
    /// The long window.
    long: String,
    /// The short window.
    short: String,
    /// The burn rate both must be over.
    factor: f64,
    /// Whether it fires now.
    firing: bool,
    /// Since when (RFC 3339); null when not firing.
    #[schema(format = DateTime)]
    since: Option<String>,
}

/// An exclusion to make: one `dependency` or one `group`, a past window, why.
#[derive(ToSchema)]
pub(crate) struct ExcludeRequest {
    /// The dependency (or `group`).
    dependency: Option<String>,
    /// The group (or `dependency`).
    group: Option<String>,
    /// The window's start (RFC 3339), rounded down to the buckets kept at it: minutes within
    /// a day, hours within a month, days beyond.
    #[schema(format = DateTime)]
    from: String,
    /// The window's end (RFC 3339, not after now), rounded down the same way.
    #[schema(format = DateTime)]
    to: String,
    /// Why: `planned failover`.
    reason: String,
    /// Who, as the audit trail says it.
    actor: Option<String>,
}

/// A past window counted as planned maintenance.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Exclusion {
    id: i64,
    /// The dependency, for one.
    dependency: Option<String>,
    /// The group, for one.
    group: Option<String>,
    /// Its start, as rounded (RFC 3339).
    #[schema(format = DateTime)]
    from: String,
    /// Its end, as rounded (RFC 3339).
    #[schema(format = DateTime)]
    to: String,
    reason: String,
    actor: Option<String>,
    /// When it was made (RFC 3339).
    #[schema(format = DateTime)]
    created: String,
    /// The time in a level it moved to muted time, in milliseconds.
    excluded_ms: u64,
}

/// Every exclusion kept.
#[derive(ToSchema)]
pub(crate) struct ExclusionList {
    exclusions: Vec<Exclusion>,
}

/// A window and a format.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct SlaParams {
    /// The window's start (RFC 3339; 30 days before `to` when not given), widened down to
    /// the buckets read.
    #[param(nullable = false, format = DateTime)]
    from: Option<String>,
    /// The window's end (RFC 3339; now when not given).
    #[param(nullable = false, format = DateTime)]
    to: Option<String>,
    /// `json` (the default) or `csv` (RFC 4180, one header row).
    #[param(nullable = false)]
    format: Option<String>,
}

/// An SLA report.
#[derive(ToSchema)]
pub(crate) struct SlaReport {
    /// The window read (RFC 3339).
    #[schema(format = DateTime)]
    from: String,
    #[schema(format = DateTime)]
    to: String,
    rows: Vec<SlaRow>,
}

/// One line of an SLA report.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SlaRow {
    /// `dependency`, `group` or `objective`.
    kind: String,
    name: String,
    /// An objective's target.
    target: Option<String>,
    /// An objective's share that must be good.
    objective: Option<f64>,
    #[schema(format = DateTime)]
    from: String,
    #[schema(format = DateTime)]
    to: String,
    /// Observed, not muted, not excluded.
    observed_ms: u64,
    /// At MAJOR or worse (an objective's own level).
    bad_ms: u64,
    good_share: Option<f64>,
    /// Not in OUTAGE.
    uptime: Option<f64>,
    incidents_opened: u64,
    excluded_ms: u64,
    /// An objective's: whether the good share met it.
    met: Option<bool>,
}
