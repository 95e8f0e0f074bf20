//! The result of a dependency's latest check, as reported.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::check::ErrorChain;
use crate::text::iso;
use crate::{CheckStatus, DependencyId, DependencyInfo, Mute, Urgency};

/// What a dependency reports: the status of its latest check after hysteresis, staleness and
/// the dependency graph were applied, with everything an operator needs to read it.
///
/// Serialized with Indeed's field names (`errorMessage`, `lastKnownGoodTimestamp`, …) plus
/// `blockedBy`, `flapping`, `stale` and `consecutiveFailures`; times are milliseconds since
/// the Unix epoch, durations milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// The dependency's description, shared with its registration (id, urgency, period…).
    pub(crate) info: Arc<DependencyInfo>,
    pub(crate) status: CheckStatus,
    pub(crate) raw_status: CheckStatus,
    pub(crate) message: String,
    pub(crate) timestamp: DateTime<Utc>,
    pub(crate) duration: Duration,
    pub(crate) last_known_good: Option<DateTime<Utc>>,
    pub(crate) since: DateTime<Utc>,
    pub(crate) thrown: Option<ErrorChain>,
    pub(crate) observed_value: Option<f64>,
    pub(crate) observed_unit: Option<crate::check::Unit>,
    pub(crate) blocked_by: Vec<DependencyId>,
    pub(crate) flapping: bool,
    pub(crate) stale: bool,
    pub(crate) checked: bool,
    pub(crate) consecutive_failures: u32,
    pub(crate) passive: bool,
    pub(crate) idle: bool,
    /// The mute in force, if any (set when the report is assembled).
    pub(crate) mute: Option<Arc<Mute>>,
}

impl CheckResult {
    /// The dependency's description, as registered.
    #[must_use]
    pub fn info(&self) -> &Arc<DependencyInfo> {
        &self.info
    }

    /// The dependency's id.
    #[must_use]
    pub fn id(&self) -> &DependencyId {
        &self.info.id
    }

    /// The status reported.
    #[must_use]
    pub fn status(&self) -> CheckStatus {
        self.status
    }

    /// The status the check itself returned, before hysteresis and staleness.
    #[must_use]
    pub fn raw_status(&self) -> CheckStatus {
        self.raw_status
    }

    /// The dependency's description.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.info.description
    }

    /// What the check said (serialized as `errorMessage`, as Indeed does, even when OK).
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// When the check finished (when the dependency was registered, if not checked yet).
    #[must_use]
    pub fn timestamp(&self) -> DateTime<Utc> {
        self.timestamp
    }

    /// `timestamp` in milliseconds since the Unix epoch.
    #[must_use]
    pub fn timestamp_millis(&self) -> i64 {
        self.timestamp.timestamp_millis()
    }

    /// How long the check took.
    #[must_use]
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// When the dependency last reported OK.
    #[must_use]
    pub fn last_known_good(&self) -> Option<DateTime<Utc>> {
        self.last_known_good
    }

    /// Since when it has reported this status.
    #[must_use]
    pub fn since(&self) -> DateTime<Utc> {
        self.since
    }

    /// The dependency's period.
    #[must_use]
    pub fn period(&self) -> Duration {
        self.info.period
    }

    /// The dependency's timeout.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.info.timeout
    }

    /// The dependency's urgency.
    #[must_use]
    pub fn urgency(&self) -> Urgency {
        self.info.urgency
    }

    /// The dependency's type (serialized as `type`).
    #[must_use]
    pub fn kind(&self) -> &str {
        &self.info.kind
    }

    /// The dependency's service pool.
    #[must_use]
    pub fn service_pool(&self) -> &str {
        &self.info.service_pool
    }

    /// The dependency's documentation URL.
    #[must_use]
    pub fn documentation_url(&self) -> &str {
        &self.info.documentation_url
    }

    /// The dependency's tags.
    #[must_use]
    pub fn tags(&self) -> &[String] {
        &self.info.tags
    }

    /// The error the check raised, if any.
    #[must_use]
    pub fn thrown(&self) -> Option<&ErrorChain> {
        self.thrown.as_ref()
    }

    /// Its message, with the root of the error chain when that says more: `error sending
    /// request for url: Connection refused`. What text views and log lines show.
    #[must_use]
    pub fn message_with_cause(&self) -> String {
        match self.thrown.as_ref().map(ErrorChain::root) {
            Some(root) if !self.message.contains(root) => format!("{}: {root}", self.message),
            _ => self.message.clone(),
        }
    }

    /// The value the check measured, if any.
    #[must_use]
    pub fn observed_value(&self) -> Option<f64> {
        self.observed_value
    }

    /// The unit of [`observed_value`](Self::observed_value), when the check said it.
    #[must_use]
    pub fn observed_unit(&self) -> Option<crate::check::Unit> {
        self.observed_value.and(self.observed_unit)
    }

    /// The failing ancestors this failure is attributed to (root causes, sorted).
    #[must_use]
    pub fn blocked_by(&self) -> &[DependencyId] {
        &self.blocked_by
    }

    /// Whether the status changed too often lately.
    #[must_use]
    pub fn flapping(&self) -> bool {
        self.flapping
    }

    /// Whether the latest result is older than three periods plus the timeout.
    #[must_use]
    pub fn stale(&self) -> bool {
        self.stale
    }

    /// Whether the dependency has been checked at all.
    #[must_use]
    pub fn checked(&self) -> bool {
        self.checked
    }

    /// Failures in a row, counting the latest check.
    #[must_use]
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// Whether its results are pushed by live traffic ([`Registry::add_passive`]) rather
    /// than polled.
    ///
    /// [`Registry::add_passive`]: crate::Registry::add_passive
    #[must_use]
    pub fn passive(&self) -> bool {
        self.passive
    }

    /// For a passive dependency: nothing was recorded for a period. It keeps its last status
    /// (no traffic is not a failure) and says so.
    #[must_use]
    pub fn idle(&self) -> bool {
        self.idle
    }

    /// The mute in force on the dependency, if any: it is checked and reported, but sends no
    /// notice.
    #[must_use]
    pub fn mute(&self) -> Option<&Mute> {
        self.mute.as_deref()
    }

    /// The same result as the public view shows it: no error chain, no mute, and a failure's
    /// message replaced by its status. Unchanged (shared) when there is nothing to withhold.
    #[must_use]
    pub fn public(self: &Arc<Self>) -> Arc<Self> {
        if !self.withholds() {
            return Arc::clone(self);
        }
        let mut public = (**self).clone();
        public.thrown = None;
        public.mute = None;
        if public.status != CheckStatus::Ok {
            public.message = public.status.to_string();
        }
        Arc::new(public)
    }

    /// This result as if it reported `status`: for tests and simulators of what reads results
    /// (a notification policy, a dashboard). The registry itself never calls it.
    #[must_use]
    pub fn with_status(mut self, status: CheckStatus) -> Self {
        self.status = status;
        self
    }

    /// This result as if it were (or were not) flapping; see [`with_status`](Self::with_status).
    #[must_use]
    pub fn with_flapping(mut self, flapping: bool) -> Self {
        self.flapping = flapping;
        self
    }

    /// This result as if blocked by `parents`; see [`with_status`](Self::with_status).
    #[must_use]
    pub fn with_blocked_by(mut self, parents: Vec<DependencyId>) -> Self {
        self.blocked_by = parents;
        self
    }

    /// This result as if `mute` were in force; see [`with_status`](Self::with_status).
    #[must_use]
    pub fn with_mute(mut self, mute: Option<Mute>) -> Self {
        self.mute = mute.map(Arc::new);
        self
    }

    /// Whether the public view hides anything of it.
    #[must_use]
    pub fn withholds(&self) -> bool {
        self.thrown.is_some() || self.status != CheckStatus::Ok || self.mute.is_some()
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Serialize for CheckResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("CheckResult", 26)?;
        s.serialize_field("id", self.id())?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("description", self.description())?;
        s.serialize_field("errorMessage", &self.message)?;
        s.serialize_field("timestamp", &self.timestamp.timestamp_millis())?;
        s.serialize_field("duration", &millis(self.duration))?;
        s.serialize_field(
            "lastKnownGoodTimestamp",
            &self.last_known_good.map_or(0, |t| t.timestamp_millis()),
        )?;
        s.serialize_field("period", &millis(self.period()))?;
        s.serialize_field("urgency", &self.urgency())?;
        s.serialize_field("type", self.kind())?;
        s.serialize_field("servicePool", self.service_pool())?;
        s.serialize_field("documentationUrl", self.documentation_url())?;
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
        s.serialize_field("timeout", &millis(self.timeout()))?;
        s.serialize_field("tags", self.tags())?;
        if let Some(value) = self.observed_value {
            s.serialize_field("observedValue", &value)?;
        }
        if self.passive {
            s.serialize_field("passive", &true)?;
            s.serialize_field("idle", &self.idle)?;
        }
        if let Some(mute) = &self.mute {
            s.serialize_field("mute", mute)?;
        }
        s.end()
    }
}
