//! Readiness and startup: what a readiness and a startup probe ask, answered here so that
//! every layer above only renders the answer.

use std::fmt;

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use crate::{CheckStatus, DependencyId, DrainState};

/// Whether the instance should receive traffic: startup done, the condition not failing, no
/// hold in force; and, with an [`Excuse`](crate::Excuse) such as status-fleet's fleet-aware
/// readiness, a failure the data center shares excused.
///
/// [`reasons`](Self::reasons) is empty exactly when [`ready`](Self::ready) is.
///
/// # Example
///
/// ```
/// use status_core::{CheckStatus, Readiness};
///
/// let readiness = Readiness::judge(CheckStatus::Outage, false, true, None, || {
///     vec!["primary-db is OUTAGE".to_owned()]
/// });
/// assert!(!readiness.ready());
/// assert_eq!(readiness.reasons(), ["system is OUTAGE: primary-db is OUTAGE"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    ready: bool,
    condition: CheckStatus,
    condition_fails: bool,
    fails_from: CheckStatus,
    startup_complete: bool,
    drain: Option<DrainState>,
    reasons: Vec<String>,
    rule: Option<ReadinessRule>,
}

/// With fleet-aware readiness, the rule that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadinessRule {
    /// The instance's own: its condition, startup and holds.
    Instance,
    /// The fleet's: the instance fails on its condition alone, and its failing dependencies
    /// are shared by its data center (or readiness fails open there). The failure is the data
    /// center's; the instance stays ready and whether the data center gets traffic is left to
    /// its endpoint. The sentence says so, with the counts.
    Fleet(String),
}

impl ReadinessRule {
    /// `instance` or `fleet`, as the readiness body names it.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Instance => "instance",
            Self::Fleet(_) => "fleet",
        }
    }
}

impl fmt::Display for ReadinessRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Readiness {
    /// Judges readiness on `condition` (with `strict`, anything but OK fails it), startup
    /// and the holds in force. `failing` names the dependencies that make the condition fail
    /// (`"primary-db is OUTAGE"`); it is only called when the condition fails.
    pub fn judge(
        condition: CheckStatus,
        strict: bool,
        startup_complete: bool,
        drain: Option<DrainState>,
        failing: impl FnOnce() -> Vec<String>,
    ) -> Self {
        let fails = Self::fails_on(condition, strict);
        let fails_from = if strict {
            CheckStatus::Minor
        } else {
            CheckStatus::Outage
        };
        Self::judge_with(
            || "system".to_owned(),
            condition,
            (fails, fails_from),
            startup_complete,
            drain,
            failing,
        )
    }

    /// As [`judge`](Self::judge), with whether the condition fails already decided (by a
    /// group's rule, say) and the lowest status that fails, for `subject` (`system`,
    /// `group cache`).
    pub(crate) fn judge_with(
        subject: impl FnOnce() -> String,
        condition: CheckStatus,
        (fails, fails_from): (bool, CheckStatus),
        startup_complete: bool,
        drain: Option<DrainState>,
        failing: impl FnOnce() -> Vec<String>,
    ) -> Self {
        let mut reasons = Vec::new();
        if fails {
            let subject = subject();
            reasons.push(format!(
                "{subject} is {condition}: {}",
                failing().join(", ")
            ));
        }
        if !startup_complete {
            reasons.push("startup not complete: some dependencies were never checked".to_owned());
        }
        if let Some(drain) = &drain {
            reasons.push(format!("draining: {}", drain.reasons()));
        }
        Self {
            ready: reasons.is_empty(),
            condition,
            condition_fails: fails,
            fails_from,
            startup_complete,
            drain,
            reasons,
            rule: None,
        }
    }

    /// Whether `condition` fails readiness: OUTAGE does; with `strict`, anything but OK.
    #[must_use]
    pub fn fails_on(condition: CheckStatus, strict: bool) -> bool {
        if strict {
            condition != CheckStatus::Ok
        } else {
            condition == CheckStatus::Outage
        }
    }

    /// Whether the instance should receive traffic.
    #[must_use]
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// The system status the answer was judged on.
    #[must_use]
    pub fn condition(&self) -> CheckStatus {
        self.condition
    }

    /// Whether the condition fails readiness, by itself.
    #[must_use]
    pub fn condition_fails(&self) -> bool {
        self.condition_fails
    }

    /// Whether a condition of `level` would fail readiness by the rule this answer was judged
    /// on (OUTAGE; with `strict` readiness, anything but OK; a group's own status): what an
    /// excuse asks of the failures it cannot excuse.
    #[must_use]
    pub fn fails_at(&self, level: CheckStatus) -> bool {
        level != CheckStatus::Ok && level >= self.fails_from
    }

    /// Whether every polled dependency has been checked once.
    #[must_use]
    pub fn startup_complete(&self) -> bool {
        self.startup_complete
    }

    /// The holds in force, if any.
    #[must_use]
    pub fn drain(&self) -> Option<&DrainState> {
        self.drain.as_ref()
    }

    /// Why it is not ready, in sentences: empty when ready.
    #[must_use]
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// With fleet-aware readiness, the rule that answered; `None` without it.
    #[must_use]
    pub fn rule(&self) -> Option<&ReadinessRule> {
        self.rule.as_ref()
    }

    /// Whether it fails on its condition alone: startup done, no hold. Only such a failure
    /// can be the data center's.
    /// Whether this fails on the condition alone: started, held by nobody, and not ready.
    /// Only such a failure may be excused ([`by_fleet`](Self::by_fleet)).
    #[must_use]
    pub fn fails_on_condition_alone(&self) -> bool {
        !self.ready && self.startup_complete && self.drain.is_none()
    }

    /// Judged by the instance's own rule, said so ([`rule`](Self::rule) is
    /// [`ReadinessRule::Instance`]).
    #[must_use]
    pub fn by_instance(mut self) -> Self {
        self.rule = Some(ReadinessRule::Instance);
        self
    }

    /// Excused by the fleet's rule: ready, with the sentence that says why. A readiness that
    /// does not fail on its condition alone (a hold, startup pending, or ready already) is
    /// never excused: it is returned as [`by_instance`](Self::by_instance) would.
    #[must_use]
    pub fn by_fleet(mut self, why: String) -> Self {
        if !self.fails_on_condition_alone() {
            return self.by_instance();
        }
        self.ready = true;
        self.reasons.clear();
        self.rule = Some(ReadinessRule::Fleet(why));
        self
    }
}

/// The one startup rule: a polled dependency never checked holds up startup; a passive one
/// never does (no traffic yet is not a failure to start).
pub(crate) fn holds_up_startup(passive: bool, checked: bool) -> bool {
    !passive && !checked
}

/// Whether startup is complete: every polled dependency checked once (passive ones never
/// hold it up), and which are still pending. One rule, read by the startup probe and by
/// readiness alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Startup {
    pending: Vec<DependencyId>,
}

impl Startup {
    pub(crate) fn new(pending: Vec<DependencyId>) -> Self {
        Self { pending }
    }

    /// Whether every polled dependency has been checked once.
    #[must_use]
    pub fn complete(&self) -> bool {
        self.pending.is_empty()
    }

    /// The polled dependencies never checked yet, by id.
    #[must_use]
    pub fn pending(&self) -> &[DependencyId] {
        &self.pending
    }
}

/// `{"pending": […], "startupComplete": …}`.
impl Serialize for Startup {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Startup", 2)?;
        s.serialize_field("pending", &self.pending)?;
        s.serialize_field("startupComplete", &self.complete())?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;
    use crate::{HoldSource, RotationHold};

    fn hold(source: HoldSource, reason: &str) -> RotationHold {
        RotationHold {
            source,
            reason: reason.to_owned(),
            actor: None,
            since: DateTime::UNIX_EPOCH,
            until: None,
            deadline: None,
        }
    }

    #[test]
    fn readiness_names_every_reason() {
        let drain = DrainState::of(
            None,
            vec![
                hold(HoldSource::Shutdown, "stopping"),
                hold(HoldSource::Operator, "deploy"),
            ],
        );
        let r = Readiness::judge(CheckStatus::Outage, false, false, drain, || {
            vec!["db is OUTAGE".to_owned()]
        });
        assert!(!r.ready());
        assert!(!r.fails_on_condition_alone());
        assert_eq!(
            r.reasons(),
            [
                "system is OUTAGE: db is OUTAGE",
                "startup not complete: some dependencies were never checked",
                "draining: stopping; deploy",
            ]
        );
        assert_eq!(
            r.drain().unwrap().reason,
            "stopping",
            "the most final hold describes it"
        );
    }

    #[test]
    fn strict_readiness_fails_on_anything_but_ok() {
        assert!(!Readiness::fails_on(CheckStatus::Major, false));
        assert!(Readiness::fails_on(CheckStatus::Minor, true));
        let ready = Readiness::judge(CheckStatus::Major, false, true, None, Vec::new);
        assert!(ready.ready() && ready.reasons().is_empty() && !ready.condition_fails());
        let strict = Readiness::judge(CheckStatus::Major, true, true, None, Vec::new);
        assert!(!strict.ready() && strict.condition_fails());
    }

    #[test]
    fn an_excused_failure_is_ready_with_no_reasons() {
        let alone = Readiness::judge(CheckStatus::Outage, false, true, None, Vec::new);
        assert!(alone.fails_on_condition_alone());
        let excused = alone.by_fleet("shared".to_owned());
        assert!(excused.ready() && excused.reasons().is_empty());
        assert_eq!(excused.rule().map(ReadinessRule::as_str), Some("fleet"));
    }
}
