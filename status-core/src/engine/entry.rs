//! One registered dependency and its state.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::{BoxFuture, Shared};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::hysteresis::{FlapDetector, Hysteresis};
use super::run::Executed;
use crate::history::{History, Transition};
use crate::{CheckResult, CheckStatus, Dependency, DependencyInfo};

/// A run of a check that others can join.
pub(crate) type RunFuture = Shared<BoxFuture<'static, Option<Arc<CheckResult>>>>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryConfig {
    pub(crate) flap_window: usize,
    pub(crate) flap_threshold: usize,
}

pub(crate) struct Entry {
    pub(crate) dep: Dependency,
    pub(crate) state: Mutex<EntryState>,
    pub(crate) inflight: Mutex<Option<RunFuture>>,
    pub(crate) scheduler: Mutex<Option<AbortHandle>>,
}

pub(crate) struct EntryState {
    /// The latest result, before staleness and the dependency graph are applied.
    pub(crate) result: Arc<CheckResult>,
    /// When `result` was made.
    pub(crate) at: Instant,
    pub(crate) stale_reported: bool,
    hysteresis: Hysteresis,
    flaps: FlapDetector,
    pub(crate) history: History,
}

/// What recording one check changed.
pub(crate) struct Recorded {
    pub(crate) result: Arc<CheckResult>,
    /// The reported status before, if the dependency had been checked.
    pub(crate) previous: Option<CheckStatus>,
}

impl Recorded {
    pub(crate) fn changed(&self) -> bool {
        self.previous != Some(self.result.status)
    }
}

impl Entry {
    pub(crate) fn new(
        dep: Dependency,
        now: Instant,
        wall: DateTime<Utc>,
        transitions: usize,
    ) -> Self {
        let result = Arc::new(pending_result(&dep.info, wall));
        Self {
            dep,
            state: Mutex::new(EntryState {
                result,
                at: now,
                stale_reported: false,
                hysteresis: Hysteresis::default(),
                flaps: FlapDetector::new(),
                history: History::new(transitions),
            }),
            inflight: Mutex::new(None),
            scheduler: Mutex::new(None),
        }
    }

    pub(crate) fn info(&self) -> &DependencyInfo {
        &self.dep.info
    }

    pub(crate) fn stop(&self) {
        if let Some(task) = lock(&self.scheduler).take() {
            task.abort();
        }
    }
}

/// The result of a dependency not checked yet: MAJOR, "Not checked yet" (unknown is never OK).
fn pending_result(info: &DependencyInfo, wall: DateTime<Utc>) -> CheckResult {
    CheckResult {
        id: info.id.clone(),
        status: CheckStatus::Major,
        raw_status: CheckStatus::Major,
        description: info.description.clone(),
        message: "Not checked yet".to_owned(),
        timestamp: wall,
        duration: Duration::ZERO,
        last_known_good: None,
        since: wall,
        period: info.period,
        timeout: info.timeout,
        urgency: info.urgency,
        kind: info.kind.clone(),
        service_pool: info.service_pool.clone(),
        documentation_url: info.documentation_url.clone(),
        tags: info.tags.clone(),
        thrown: None,
        observed_value: None,
        blocked_by: Vec::new(),
        flapping: false,
        stale: false,
        checked: false,
        consecutive_failures: 0,
    }
}

impl EntryState {
    /// Records one executed check.
    pub(crate) fn record(
        &mut self,
        info: &DependencyInfo,
        executed: Executed,
        wall: DateTime<Utc>,
        config: EntryConfig,
    ) -> Recorded {
        let (raw, message, thrown, value) = executed.outcome.into_parts();
        let verdict = self.hysteresis.apply(
            raw,
            info.failures_before_outage,
            info.successes_before_recovery,
        );
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
            observed_value: value,
            flapping,
            checked: true,
            consecutive_failures: self.hysteresis.consecutive_failures(),
            ..pending_result(info, wall)
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
        self.stale_reported = false;
        Recorded { result, previous }
    }

    /// Whether the result is stale at `now`.
    pub(crate) fn is_stale(&self, info: &DependencyInfo, now: Instant) -> bool {
        now.saturating_duration_since(self.at) > info.stale_after()
    }

    /// When the result turns stale.
    pub(crate) fn stale_at(&self, info: &DependencyInfo) -> Instant {
        self.at + info.stale_after()
    }

    /// The result as reported at `now`: no better than MAJOR once stale.
    pub(crate) fn view(&self, info: &DependencyInfo, now: Instant) -> Arc<CheckResult> {
        if !self.is_stale(info, now) {
            return Arc::clone(&self.result);
        }
        let age = now.saturating_duration_since(self.at);
        let mut stale = (*self.result).clone();
        stale.stale = true;
        stale.status = stale.status.no_better_than(CheckStatus::Major);
        stale.message = if stale.checked {
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
        Arc::new(stale)
    }
}
