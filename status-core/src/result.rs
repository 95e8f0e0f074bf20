//! The result of a dependency's latest check, as reported.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::check::ErrorChain;
use crate::{CheckStatus, DependencyId, Urgency};

/// What a dependency reports: the status of its latest check after hysteresis, staleness and
/// the dependency graph were applied, with everything an operator needs to read it.
///
/// Serialized with Indeed's field names (`errorMessage`, `lastKnownGoodTimestamp`, …) plus
/// `blockedBy`, `flapping`, `stale` and `consecutiveFailures`; times are milliseconds since
/// the Unix epoch, durations milliseconds.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CheckResult {
    /// The dependency's id.
    pub id: DependencyId,
    /// The status reported.
    pub status: CheckStatus,
    /// The status the check itself returned, before hysteresis and staleness.
    pub raw_status: CheckStatus,
    /// The dependency's description.
    pub description: String,
    /// What the check said (serialized as `errorMessage`, as Indeed does, even when OK).
    pub message: String,
    /// When the check finished (when the dependency was registered, if not checked yet).
    pub timestamp: DateTime<Utc>,
    /// How long the check took.
    pub duration: Duration,
    /// When the dependency last reported OK.
    pub last_known_good: Option<DateTime<Utc>>,
    /// Since when it has reported this status.
    pub since: DateTime<Utc>,
    /// The dependency's period.
    pub period: Duration,
    /// The dependency's timeout.
    pub timeout: Duration,
    /// The dependency's urgency.
    pub urgency: Urgency,
    /// The dependency's type (serialized as `type`).
    pub kind: String,
    /// The dependency's service pool.
    pub service_pool: String,
    /// The dependency's documentation URL.
    pub documentation_url: String,
    /// The dependency's tags.
    pub tags: Vec<String>,
    /// The error the check raised, if any.
    pub thrown: Option<ErrorChain>,
    /// The value the check measured, if any.
    pub observed_value: Option<f64>,
    /// The failing ancestors this failure is attributed to (root causes, sorted).
    pub blocked_by: Vec<DependencyId>,
    /// Whether the status changed too often lately.
    pub flapping: bool,
    /// Whether the latest result is older than three periods plus the timeout.
    pub stale: bool,
    /// Whether the dependency has been checked at all.
    pub checked: bool,
    /// Failures in a row, counting the latest check.
    pub consecutive_failures: u32,
    /// Whether its results are pushed by live traffic ([`Registry::add_passive`]) rather
    /// than polled.
    ///
    /// [`Registry::add_passive`]: crate::Registry::add_passive
    pub passive: bool,
    /// For a passive dependency: nothing was recorded for a period. It keeps its last status
    /// (no traffic is not a failure) and says so.
    pub idle: bool,
}

impl CheckResult {
    /// `timestamp` in milliseconds since the Unix epoch.
    #[must_use]
    pub fn timestamp_millis(&self) -> i64 {
        self.timestamp.timestamp_millis()
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(crate) fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl Serialize for CheckResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("CheckResult", 25)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("description", &self.description)?;
        s.serialize_field("errorMessage", &self.message)?;
        s.serialize_field("timestamp", &self.timestamp.timestamp_millis())?;
        s.serialize_field("duration", &millis(self.duration))?;
        s.serialize_field(
            "lastKnownGoodTimestamp",
            &self.last_known_good.map_or(0, |t| t.timestamp_millis()),
        )?;
        s.serialize_field("period", &millis(self.period))?;
        s.serialize_field("urgency", &self.urgency)?;
        s.serialize_field("type", &self.kind)?;
        s.serialize_field("servicePool", &self.service_pool)?;
        s.serialize_field("documentationUrl", &self.documentation_url)?;
        s.serialize_field("date", &iso(self.timestamp))?;
        if let Some(thrown) = &self.thrown {
            s.serialize_field("thrown", thrown)?;
        }
        s.serialize_field("blockedBy", &self.blocked_by)?;
        s.serialize_field("flapping", &self.flapping)?;
        s.serialize_field("stale", &self.stale)?;
        s.serialize_field("consecutiveFailures", &self.consecutive_failures)?;
        s.serialize_field("checked", &self.checked)?;
        s.serialize_field("rawStatus", &self.raw_status)?;
        s.serialize_field("sinceTimestamp", &self.since.timestamp_millis())?;
        s.serialize_field("timeout", &millis(self.timeout))?;
        s.serialize_field("tags", &self.tags)?;
        if let Some(value) = self.observed_value {
            s.serialize_field("observedValue", &value)?;
        }
        if self.passive {
            s.serialize_field("passive", &true)?;
            s.serialize_field("idle", &self.idle)?;
        }
        s.end()
    }
}
