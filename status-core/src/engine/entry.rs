//! One registered dependency and its state: the only place where a result is recorded, and
//! where staleness and idleness are applied to it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::{BoxFuture, Shared};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::hysteresis::{FlapDetector, Hysteresis};
use super::run::Executed;
use crate::check::DynCheck;
use crate::history::{History, Transition};
use crate::mask::masked;
use crate::sync::lock;
use crate::{CheckResult, CheckStatus, DependencyInfo};

/// A run of a check that others can join.
pub(crate) type RunFuture = Shared<BoxFuture<'static, Option<Arc<CheckResult>>>>;

#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryConfig {
    pub(crate) flap_window: usize,
    pub(crate) flap_threshold: usize,
}

pub(crate) struct Entry {
    pub(crate) info: Arc<DependencyInfo>,
    /// The check; `None` for a passive dependency, whose results are pushed.
    pub(crate) check: Option<Arc<dyn DynCheck>>,
    pub(crate) state: Mutex<EntryState>,
    pub(crate) inflight: Mutex<Option<RunFuture>>,
    pub(crate) scheduler: Mutex<Option<AbortHandle>>,
    /// How the dependency table counts it; changed only under the table's fold lock.
    pub(crate) counted: Counted,
}

/// What the dependency table has counted of an entry, so that a group registered later
/// counts it as the system does, and its removal takes back exactly what was counted.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    /// The severity of the status it adds to the folds, plus one; zero while not counted.
    pub(crate) status: AtomicU8,
    /// The groups that count it, one bit a group.
    pub(crate) groups: AtomicU64,
    /// Whether it holds up startup.
    pub(crate) pending: AtomicBool,
}

pub(crate) struct EntryState {
    /// The latest result, before staleness and the dependency graph are applied.
    pub(crate) result: Arc<CheckResult>,
    /// When `result` was made.
    pub(crate) at: Instant,
    /// Whether the last report of it said stale (or idle, for a passive dependency).
    pub(crate) aged_reported: bool,
    /// What it adds to the system status now (its urgency-capped reported status), as
    /// counted by the dependency table.
    pub(crate) folded: CheckStatus,
    hysteresis: Hysteresis,
    flaps: FlapDetector,
    pub(crate) history: History,
}

/// What recording one check changed.
pub(crate) struct Recorded {
    pub(crate) result: Arc<CheckResult>,
    /// The reported status before, if the dependency had been checked.
    pub(crate) previous: Option<CheckStatus>,
    /// Whether what a report shows changed beyond timestamps: status, staleness, flapping.
    pub(crate) significant: bool,
}

impl Entry {
    pub(crate) fn new(
        info: Arc<DependencyInfo>,
        check: Option<Arc<dyn DynCheck>>,
        now: Instant,
        wall: DateTime<Utc>,
        transitions: usize,
    ) -> Self {
        let result = Arc::new(pending_result(&info, wall, check.is_none()));
        Self {
            state: Mutex::new(EntryState {
                folded: info.urgency.cap(result.status),
                result,
                at: now,
                aged_reported: false,
                hysteresis: Hysteresis::default(),
                flaps: FlapDetector::new(),
                history: History::new(transitions),
            }),
            info,
            check,
            inflight: Mutex::new(None),
            scheduler: Mutex::new(None),
            counted: Counted::default(),
        }
    }

    pub(crate) fn info(&self) -> &DependencyInfo {
        &self.info
    }

    pub(crate) fn is_passive(&self) -> bool {
        self.check.is_none()
    }

    pub(crate) fn stop(&self) {
        if let Some(task) = lock(&self.scheduler).take() {
            task.abort();
        }
    }
}

/// The result of a dependency not checked yet. Polled: MAJOR, "Not checked yet" (unknown is
/// never OK). Passive: OK, "No traffic yet" (no traffic is not a failure, and readiness must
/// not wait for traffic that only comes once the instance is ready).
fn pending_result(info: &Arc<DependencyInfo>, wall: DateTime<Utc>, passive: bool) -> CheckResult {
    let (status, message) = if passive {
        (CheckStatus::Ok, "No traffic yet")
    } else {
        (CheckStatus::Major, "Not checked yet")
    };
    CheckResult {
        info: Arc::clone(info),
        status,
        raw_status: status,
        message: message.to_owned(),
        timestamp: wall,
        duration: Duration::ZERO,
        last_known_good: None,
        since: wall,
        thrown: None,
        observed_value: None,
        observed_unit: None,
        blocked_by: Vec::new(),
        flapping: false,
        stale: false,
        checked: false,
        consecutive_failures: 0,
        passive,
        idle: passive,
        mute: None,
    }
}

impl EntryState {
    /// Records one executed check (or pushed result): hysteresis, flapping, history, and
    /// credentials masked in what it said.
    pub(crate) fn record(
        &mut self,
        info: &Arc<DependencyInfo>,
        executed: Executed,
        wall: DateTime<Utc>,
        config: EntryConfig,
    ) -> Recorded {
        let was_aged = self.aged_reported;
        let was_flapping = self.result.flapping;
        let passive = self.result.passive;
        // A settled outcome skips the grace: its failure is the last one before the real status.
        let failures_before_outage = if executed.outcome.is_settled() {
            1
        } else {
            info.failures_before_outage
        };
        let (raw, message, thrown, value) = executed.outcome.into_parts();
        let message = masked(message);
        let thrown = thrown.map(crate::check::ErrorChain::masked);
        let verdict =
            self.hysteresis
                .apply(raw, failures_before_outage, info.successes_before_recovery);
        let flapping =
            self.flaps
                .record(verdict.reported, config.flap_window, config.flap_threshold);
        let previous = self.result.checked.then_some(self.result.status);
        let message = match verdict.note {
            Some(note) if message.is_empty() => format!("{raw} ({note})"),
            Some(note) => format!("{message} ({note})"),
            None => message,
        };
        let since = if previous == Some(verdict.reported) {
            self.result.since
        } else {
            wall
        };
        let last_known_good = if raw == CheckStatus::Ok {
            Some(wall)
        } else {
            self.result.last_known_good
        };
        // The dependency's own fields are the pending result's; the check's replace the rest.
        let result = Arc::new(CheckResult {
            status: verdict.reported,
            raw_status: raw,
            message,
            timestamp: wall,
            duration: executed.duration,
            last_known_good,
            since,
            thrown,
            observed_value: value.map(|(v, _)| v),
            observed_unit: value.and_then(|(_, unit)| unit),
            flapping,
            checked: true,
            consecutive_failures: self.hysteresis.consecutive_failures(),
            idle: false,
            ..pending_result(info, wall, passive)
        });
        if previous != Some(result.status) {
            self.history.record_transition(Transition {
                at: wall,
                from: previous,
                to: result.status,
                message: result.message.clone(),
            });
        }
        self.history.record_check(wall, result.status);
        self.result = Arc::clone(&result);
        self.at = executed.finished;
        self.aged_reported = false;
        let significant = previous != Some(result.status) || was_aged || was_flapping != flapping;
        Recorded {
            result,
            previous,
            significant,
        }
    }

    /// How long a result lasts before it ages: stale after three periods plus the timeout
    /// for a polled dependency, idle after one period for a passive one.
    fn ages_after(&self, info: &DependencyInfo) -> Duration {
        if self.result.passive {
            info.period
        } else {
            info.stale_after()
        }
    }

    /// Whether the result has aged at `now`: stale (polled) or idle (passive).
    pub(crate) fn is_aged(&self, info: &DependencyInfo, now: Instant) -> bool {
        now.saturating_duration_since(self.at) > self.ages_after(info)
    }

    /// When the result ages.
    pub(crate) fn ages_at(&self, info: &DependencyInfo) -> Instant {
        self.at + self.ages_after(info)
    }

    /// The status reported at `now`: the staleness cap (no better than MAJOR) is applied
    /// here and nowhere else. An idle passive dependency keeps its status.
    pub(crate) fn reported_status(&self, info: &DependencyInfo, now: Instant) -> CheckStatus {
        let status = self.result.status;
        if !self.result.passive && self.is_aged(info, now) {
            status.no_better_than(CheckStatus::Major)
        } else {
            status
        }
    }

    /// The result as reported at `now`: stale or idle marked.
    pub(crate) fn view(&self, info: &DependencyInfo, now: Instant) -> Arc<CheckResult> {
        if !self.is_aged(info, now) {
            return Arc::clone(&self.result);
        }
        let mut aged = (*self.result).clone();
        if aged.passive {
            aged.idle = true;
            return Arc::new(aged);
        }
        let age = now.saturating_duration_since(self.at);
        aged.stale = true;
        aged.status = self.reported_status(info, now);
        aged.message = if aged.checked {
            format!(
                "Stale: last checked {}s ago, expected every {}s ({})",
                age.as_secs(),
                info.period.as_secs_f64(),
                self.result.message
            )
        } else {
            format!(
                "Stale: not checked in the {}s since registration",
                age.as_secs()
            )
        };
        Arc::new(aged)
    }
}
