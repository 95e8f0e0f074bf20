//! Every name this crate exports, in one place (the table in the crate's documentation).

/// The system's state set: `status.state` is `ok`, `minor`, `major` or `outage`.
pub const SYSTEM_STATE: &str = "status.system.state";
/// Each dependency's state set, with its id, urgency, kind and groups.
pub const DEPENDENCY_STATE: &str = "status.dependency.state";
/// Each probe group's state set.
pub const GROUP_STATE: &str = "status.group.state";
/// Each feature's state set: `status.state` is `enabled` or `disabled`.
pub const FEATURE_STATE: &str = "status.feature.state";
/// A value a dependency's latest check measured in no unit it said, as measured (a check
/// that says its unit has its value under the name of what it measures, below).
pub const DEPENDENCY_VALUE: &str = "status.dependency.value";
/// A duration a dependency's latest check measured (a latency), in seconds (`s`).
pub const DEPENDENCY_LATENCY: &str = "status.dependency.latency";
/// A moment a dependency's latest check measured (a certificate's expiry), in seconds since
/// the Unix epoch (`s`).
pub const DEPENDENCY_TIMESTAMP: &str = "status.dependency.timestamp";
/// A count a dependency's latest check measured (a queue's depth), `{item}`.
pub const DEPENDENCY_COUNT: &str = "status.dependency.count";
/// A share a dependency's latest check measured, from 0 to 1 (`1`).
pub const DEPENDENCY_RATIO: &str = "status.dependency.ratio";
/// A size a dependency's latest check measured, in bytes (`By`).
pub const DEPENDENCY_SIZE: &str = "status.dependency.size";
/// How long each check took, in seconds, by dependency and outcome.
pub const CHECK_DURATION: &str = "status.check.duration";
/// Changes of a dependency's reported status, by dependency, from and to.
pub const TRANSITIONS: &str = "status.dependency.transitions";
/// The alias of .NET's count of health reports, by `dotnet.health_check.status`.
pub const DOTNET_REPORTS: &str = "dotnet.health_check.reports";
/// The alias of .NET's count of unhealthy check results, by `dotnet.health_check.name`.
pub const DOTNET_UNHEALTHY: &str = "dotnet.health_check.unhealthy_checks";
/// The event name of the log record written per transition.
pub const TRANSITION_EVENT: &str = "status.transition";
/// The name of the span written per check run, when asked.
pub const CHECK_SPAN: &str = "status.check";

/// The state of a state set.
pub const STATE: &str = "status.state";
/// A dependency's id.
pub const DEPENDENCY_ID: &str = "status.dependency.id";
/// A dependency's urgency: `REQUIRED`, `STRONG`, `WEAK`, `NONE`.
pub const DEPENDENCY_URGENCY: &str = "status.dependency.urgency";
/// The remote service a dependency is, when it is one (its service pool): OpenTelemetry's
/// `service.peer.name` (semantic conventions 1.39).
pub const SERVICE_PEER_NAME: &str = "service.peer.name";
/// A dependency's kind (`redis`, `postgres`, …), empty when not set.
pub const DEPENDENCY_KIND: &str = "status.dependency.kind";
/// The probe groups a dependency belongs to, comma-separated and sorted.
pub const DEPENDENCY_GROUPS: &str = "status.dependency.groups";
/// A probe group's name.
pub const GROUP_NAME: &str = "status.group.name";
/// A feature's name.
pub const FEATURE_NAME: &str = "status.feature.name";
/// How a check run ended: `ok`, `minor`, `major`, `outage`, `timeout`, `panic`.
pub const CHECK_OUTCOME: &str = "status.check.outcome";
/// The status a transition left (`ok`, … or `unknown` before the first check).
pub const FROM: &str = "status.state.from";
/// The status a transition reached.
pub const TO: &str = "status.state.to";
/// A transition's message.
pub const MESSAGE: &str = "status.message";
/// The dependencies a transition's failure is attributed to (`blockedBy`), comma-separated.
pub const CAUSES: &str = "status.causes";
/// The error chain behind a transition's failure, when there is one.
pub const ERROR: &str = "status.error";
/// Whether the dependency was muted when it changed.
pub const MUTED: &str = "status.muted";

/// The burn rate of an objective over a window (feature `history`).
pub const SLO_BURN_RATE: &str = "status.slo.burn_rate";
/// What is left of an objective's error budget (feature `history`).
pub const SLO_BUDGET_REMAINING: &str = "status.slo.error_budget.remaining_ratio";
/// Whether an objective's burn-rate alert of a severity fires (feature `history`).
pub const SLO_ALERT_FIRING: &str = "status.slo.alert.firing";
/// The objective's name, on its metrics.
pub const SLO: &str = "status.slo";
/// The burn rate's window (`5m` … `3d`).
pub const SLO_WINDOW: &str = "status.slo.window";
/// The alert's severity (`page`, `ticket`).
pub const SLO_SEVERITY: &str = "status.slo.severity";
