//! The documents the system reports: detailed, summary, IETF health+json and verbose text.
//!
//! The HTTP layer only renders these; what they contain, and in which order, is decided here.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::Serialize;

use crate::result::millis;
use crate::text::iso;
use crate::{CheckResult, CheckStatus, DrainState, Startup, Urgency};

mod views;

pub use self::views::{HealthJson, Summary, SummaryHealthJson, Verdict};

/// The system status folded from dependencies' urgencies and statuses, starting from OK.
///
/// The fold is a meet on a lattice, so the order of `results` does not matter.
///
/// # Example
///
/// ```
/// use status_core::{system_status, CheckStatus, Urgency};
///
/// let status = system_status([
///     (Urgency::Weak, CheckStatus::Outage),
///     (Urgency::Strong, CheckStatus::Minor),
/// ]);
/// assert_eq!(status, CheckStatus::Minor);
/// ```
pub fn system_status(results: impl IntoIterator<Item = (Urgency, CheckStatus)>) -> CheckStatus {
    results
        .into_iter()
        .fold(CheckStatus::Ok, |system, (urgency, dependency)| {
            urgency.downgrade_with(system, dependency)
        })
}

/// Every dependency's latest result and the system status folded from them.
///
/// Serializes as Indeed's detailed report: `condition`, `dcStatus`, `hostname`, `appname`,
/// `duration`, `timestamp`, `leastRecentlyExecutedTimestamp`, and `results` keyed by status,
/// worst first, each sorted by id.
#[derive(Debug, Clone)]
pub struct SystemReport {
    condition: CheckStatus,
    hostname: String,
    appname: String,
    duration: Duration,
    timestamp: DateTime<Utc>,
    least_recently_executed: Option<DateTime<Utc>>,
    results: Vec<Arc<CheckResult>>,
}

impl SystemReport {
    pub(crate) fn new(
        hostname: String,
        appname: String,
        timestamp: DateTime<Utc>,
        mut results: Vec<Arc<CheckResult>>,
    ) -> Self {
        results.sort_by(|a, b| b.status.cmp(&a.status).then_with(|| a.id().cmp(b.id())));
        let condition = system_status(results.iter().map(|r| (r.urgency(), r.status)));
        let duration = results.iter().map(|r| r.duration).max().unwrap_or_default();
        let least_recently_executed = results
            .iter()
            .filter(|r| r.checked)
            .map(|r| r.timestamp)
            .min();
        Self {
            condition,
            hostname,
            appname,
            duration,
            timestamp,
            least_recently_executed,
            results,
        }
    }

    /// The system status, folded from the results.
    #[must_use]
    pub fn condition(&self) -> CheckStatus {
        self.condition
    }

    /// The host this process runs on.
    #[must_use]
    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// The application's name.
    #[must_use]
    pub fn appname(&self) -> &str {
        &self.appname
    }

    /// The time of the slowest check in the report: what evaluating every dependency now
    /// would take, since they run concurrently.
    #[must_use]
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// When the report was assembled.
    #[must_use]
    pub fn timestamp(&self) -> DateTime<Utc> {
        self.timestamp
    }

    /// The oldest check in the report.
    #[must_use]
    pub fn least_recently_executed(&self) -> Option<DateTime<Utc>> {
        self.least_recently_executed
    }

    /// The results, worst status first, then by id.
    #[must_use]
    pub fn results(&self) -> &[Arc<CheckResult>] {
        &self.results
    }

    /// The same report as the public view shows it: each result's
    /// [`public`](CheckResult::public) form. Shared as it is when nothing is withheld.
    #[must_use]
    pub fn public(self: &Arc<Self>) -> Arc<Self> {
        if !self.results.iter().any(|r| r.withholds()) {
            return Arc::clone(self);
        }
        let mut public = (**self).clone();
        public.results = public.results.iter().map(CheckResult::public).collect();
        Arc::new(public)
    }

    /// The same report under another application name. Shared as it is when the name is
    /// the same.
    #[must_use]
    pub fn with_appname(self: &Arc<Self>, appname: &str) -> Arc<Self> {
        if self.appname == appname {
            return Arc::clone(self);
        }
        let mut renamed = (**self).clone();
        appname.clone_into(&mut renamed.appname);
        Arc::new(renamed)
    }

    /// `FAILOVER` when the condition is OUTAGE, else `OK`: what a GSLB acts on.
    #[must_use]
    pub fn dc_status(&self) -> &'static str {
        dc_status(self.condition)
    }

    /// The result of one dependency.
    #[must_use]
    pub fn result(&self, id: &str) -> Option<&Arc<CheckResult>> {
        self.results.iter().find(|r| r.id().as_str() == id)
    }

    /// The same report without the dependencies in `ids`, its condition folded again. Linear
    /// in the number of results, whatever the number of ids.
    #[must_use]
    pub fn excluding(&self, ids: &[&str]) -> SystemReport {
        let ids: std::collections::HashSet<&str> = ids.iter().copied().collect();
        let results = self
            .results
            .iter()
            .filter(|r| !ids.contains(r.id().as_str()))
            .cloned()
            .collect();
        SystemReport::new(
            self.hostname.clone(),
            self.appname.clone(),
            self.timestamp,
            results,
        )
    }

    /// The same report with only the results `keep` keeps, its condition folded again.
    #[must_use]
    pub fn only(&self, mut keep: impl FnMut(&CheckResult) -> bool) -> SystemReport {
        let results = self.results.iter().filter(|r| keep(r)).cloned().collect();
        SystemReport::new(
            self.hostname.clone(),
            self.appname.clone(),
            self.timestamp,
            results,
        )
    }

    /// The dependencies that make the condition what it is: those whose urgency-capped status
    /// equals the condition, when it is not OK. A dashboard banner names them.
    pub fn culprits(&self) -> impl Iterator<Item = &Arc<CheckResult>> {
        let condition = self.condition;
        self.results
            .iter()
            .filter(move |r| condition != CheckStatus::Ok && r.urgency().cap(r.status) == condition)
    }

    /// `"<id> is <STATUS>"` for each of the [`culprits`](Self::culprits): the one way every
    /// view says why the system is what it is.
    pub fn culprit_sentences(&self) -> impl Iterator<Item = String> + '_ {
        self.culprits()
            .map(|r| format!("{} is {}", r.id(), r.status))
    }

    /// The polled dependencies never checked yet: what holds up startup (passive ones never
    /// do).
    pub fn pending(&self) -> impl Iterator<Item = &Arc<CheckResult>> {
        self.results
            .iter()
            .filter(|r| crate::readiness::holds_up_startup(r.passive, r.checked))
    }

    /// Whether startup is complete, and what holds it up.
    #[must_use]
    pub fn startup(&self) -> Startup {
        Startup::new(self.pending().map(|r| r.id().clone()).collect())
    }

    /// The summary for load balancers: no dependency detail.
    #[must_use]
    pub fn summary(&self) -> Summary<'_> {
        Summary {
            report: self,
            drain: None,
        }
    }

    /// The IETF `application/health+json` view.
    #[must_use]
    pub fn health_json(&self) -> HealthJson<'_> {
        HealthJson { report: self }
    }

    /// Kubernetes-style text: one `[+]id ok` or `[-]id failed: …` line a dependency, then the
    /// verdict.
    ///
    /// A dependency that is degraded but not in outage is `[+]id degraded (MAJOR): …`: it
    /// does not fail the probe by itself.
    #[must_use]
    pub fn verbose(&self) -> String {
        let mut out = String::new();
        let mut sorted: Vec<_> = self.results.iter().collect();
        sorted.sort_by(|a, b| a.id().cmp(b.id()));
        for r in sorted {
            let message = one_line(&r.message_with_cause());
            let _ = match r.status {
                CheckStatus::Ok => writeln!(out, "[+]{} ok", r.id()),
                CheckStatus::Outage => writeln!(out, "[-]{} failed: {message}", r.id()),
                degraded => writeln!(out, "[+]{} degraded ({degraded}): {message}", r.id()),
            };
        }
        let verdict = if self.condition == CheckStatus::Outage {
            "failed"
        } else {
            "passed"
        };
        let _ = writeln!(out, "healthcheck {verdict}: {}", self.condition);
        out
    }
}

fn dc_status(condition: CheckStatus) -> &'static str {
    if condition == CheckStatus::Outage {
        "FAILOVER"
    } else {
        "OK"
    }
}

/// `message` on one printable line: line breaks become spaces, other control characters
/// are escaped (`\u{1b}`), so a dependency's message cannot forge a line of the verbose
/// probe nor colour a terminal.
fn one_line(message: &str) -> String {
    let mut line = String::with_capacity(message.len());
    for c in message.chars() {
        match c {
            '\r' | '\n' | '\u{2028}' | '\u{2029}' => line.push(' '),
            c if c.is_control() => line.extend(c.escape_unicode()),
            c => line.push(c),
        }
    }
    line
}

fn health_status(status: CheckStatus) -> &'static str {
    match status {
        CheckStatus::Ok => "pass",
        CheckStatus::Minor | CheckStatus::Major => "warn",
        CheckStatus::Outage => "fail",
    }
}

impl Serialize for SystemReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("SystemReport", 9)?;
        s.serialize_field("condition", &self.condition)?;
        s.serialize_field("dcStatus", self.dc_status())?;
        s.serialize_field("hostname", &self.hostname)?;
        s.serialize_field("appname", &self.appname)?;
        s.serialize_field("duration", &millis(self.duration))?;
        s.serialize_field("timestamp", &self.timestamp.timestamp_millis())?;
        s.serialize_field(
            "leastRecentlyExecutedTimestamp",
            &self
                .least_recently_executed
                .map_or(0, |t| t.timestamp_millis()),
        )?;
        s.serialize_field(
            "leastRecentlyExecutedDate",
            &self.least_recently_executed.map(iso),
        )?;
        s.serialize_field("results", &ByStatus(&self.results))?;
        s.end()
    }
}

/// Results keyed by status, worst first; relies on the report's sort order.
struct ByStatus<'a>(&'a [Arc<CheckResult>]);

impl Serialize for ByStatus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for group in self.0.chunk_by(|a, b| a.status == b.status) {
            map.serialize_entry(&group[0].status, group)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn verbose_lines_are_one_printable_line() {
        assert_eq!(
            super::one_line("down\r\n[+]db ok\u{1b}[32m\0"),
            "down  [+]db ok\\u{1b}[32m\\u{0}"
        );
    }
}
