//! The report's other views: the summary a balancer reads (and its verdict), and IETF
//! `application/health+json`.

// The report and its helpers, as report/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

/// The summary view of a [`SystemReport`]: `condition` first, so a DNS-level checker that
/// matches the first bytes finds it, then `dcStatus`, `hostname`, `duration`, `appname`,
/// `timestamp`, and `draining` when the instance is draining.
#[derive(Debug, Clone, Copy)]
pub struct Summary<'a> {
    pub(super) report: &'a SystemReport,
    pub(super) drain: Option<&'a DrainState>,
}

impl<'a> Summary<'a> {
    /// The summary of a draining instance: `condition` OUTAGE and `dcStatus` FAILOVER, so that
    /// a checker reading only the first bytes takes the instance out too, and a `draining`
    /// object says why.
    #[must_use]
    pub fn draining(mut self, drain: Option<&'a DrainState>) -> Self {
        self.drain = drain;
        self
    }

    /// What a balancer acts on: out of rotation while any hold is in force, whatever the
    /// condition; else the condition (which the HTTP layer maps to a code).
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        if self.drain.is_some() {
            Verdict::OutOfRotation
        } else {
            Verdict::Serving(self.report.condition)
        }
    }

    /// The condition it reports: the system's, or OUTAGE while draining.
    #[must_use]
    pub fn condition(&self) -> CheckStatus {
        if self.drain.is_some() {
            CheckStatus::Outage
        } else {
            self.report.condition
        }
    }

    /// The summary in the IETF `application/health+json` form: `status`, `serviceId`,
    /// `description`, and no `checks` (a summary carries no dependency detail). While
    /// draining, `status` is `fail`, as the HTTP code says, and `output` says why.
    #[must_use]
    pub fn health_json(self) -> SummaryHealthJson<'a> {
        SummaryHealthJson { summary: self }
    }
}

/// [`Summary::verdict`]: what the summary tells a balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// In rotation, with this system status.
    Serving(CheckStatus),
    /// A hold is in force (an operator's drain, a shutdown, a cull): take it out, whatever
    /// the system status.
    OutOfRotation,
}

/// [`Summary::health_json`]: the summary as `application/health+json`.
#[derive(Debug, Clone, Copy)]
pub struct SummaryHealthJson<'a> {
    summary: Summary<'a>,
}

impl SummaryHealthJson<'_> {
    /// The IETF status: `pass`, `warn` or `fail` (`fail` while draining).
    #[must_use]
    pub fn status(&self) -> &'static str {
        health_status(self.summary.condition())
    }
}

impl Serialize for SummaryHealthJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.summary.report;
        let condition = self.summary.condition();
        let mut s = serializer.serialize_struct("SummaryHealthJson", 4)?;
        s.serialize_field("status", self.status())?;
        s.serialize_field("serviceId", &r.appname)?;
        s.serialize_field(
            "description",
            &format!("{} on {}: {condition}", r.appname, r.hostname),
        )?;
        if self.summary.drain.is_some() {
            s.serialize_field("output", "out of rotation")?;
        }
        s.end()
    }
}

impl Serialize for Summary<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.report;
        let condition = self.condition();
        let mut s = serializer.serialize_struct("Summary", 7)?;
        s.serialize_field("condition", &condition)?;
        s.serialize_field("dcStatus", dc_status(condition))?;
        s.serialize_field("hostname", &r.hostname)?;
        s.serialize_field("duration", &millis(r.duration))?;
        s.serialize_field("appname", &r.appname)?;
        s.serialize_field("timestamp", &r.timestamp.timestamp_millis())?;
        if let Some(drain) = self.drain {
            s.serialize_field("draining", drain)?;
        }
        s.end()
    }
}

/// The IETF health check response format view of a [`SystemReport`]
/// (`application/health+json`): `status` is `pass`, `warn` or `fail`; `checks` are keyed
/// `<id>:status`.
#[derive(Debug, Clone, Copy)]
pub struct HealthJson<'a> {
    pub(super) report: &'a SystemReport,
}

impl HealthJson<'_> {
    /// The IETF status of the whole: `pass`, `warn` or `fail`.
    #[must_use]
    pub fn status(&self) -> &'static str {
        health_status(self.report.condition)
    }
}

impl Serialize for HealthJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.report;
        let mut s = serializer.serialize_struct("HealthJson", 5)?;
        s.serialize_field("status", self.status())?;
        s.serialize_field("serviceId", &r.appname)?;
        s.serialize_field(
            "description",
            &format!("{} on {}: {}", r.appname, r.hostname, r.condition),
        )?;
        if r.condition != CheckStatus::Ok {
            let causes: Vec<String> = r.culprit_sentences().collect();
            s.serialize_field("output", &causes.join("; "))?;
        }
        s.serialize_field("checks", &HealthChecks(&r.results))?;
        s.end()
    }
}

struct HealthChecks<'a>(&'a [Arc<CheckResult>]);

impl Serialize for HealthChecks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut sorted: Vec<_> = self.0.iter().collect();
        sorted.sort_by(|a, b| a.id().cmp(b.id()));
        let mut map = serializer.serialize_map(Some(sorted.len()))?;
        for r in sorted {
            map.serialize_entry(&format!("{}:status", r.id()), &[HealthCheck(r)])?;
        }
        map.end()
    }
}

struct HealthCheck<'a>(&'a CheckResult);

impl Serialize for HealthCheck<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut s = serializer.serialize_struct("HealthCheck", 7)?;
        s.serialize_field("componentId", &r.id())?;
        s.serialize_field("componentType", &r.kind())?;
        s.serialize_field("status", health_status(r.status))?;
        if let Some(value) = r.observed_value {
            s.serialize_field("observedValue", &value)?;
        }
        s.serialize_field("time", &iso(r.timestamp))?;
        if !r.message.is_empty() {
            s.serialize_field("output", &r.message)?;
        }
        s.serialize_field("urgency", &r.urgency())?;
        s.end()
    }
}
