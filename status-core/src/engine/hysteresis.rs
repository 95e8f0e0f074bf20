//! Hysteresis in both directions, and flapping detection.

use std::collections::VecDeque;

use crate::CheckStatus;

/// Counts consecutive failures and successes of one dependency.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hysteresis {
    ever_ok: bool,
    /// Whether the real, failing status is being reported.
    failing: bool,
    /// The status reported while failing, held while recovering.
    held: Option<CheckStatus>,
    failures: u32,
    successes: u32,
}

/// What hysteresis makes of one raw status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) reported: CheckStatus,
    /// Why `reported` differs from the raw status, if it does.
    pub(crate) note: Option<String>,
}

impl Hysteresis {
    pub(crate) fn consecutive_failures(&self) -> u32 {
        self.failures
    }

    /// Applies one raw status.
    ///
    /// A dependency that has succeeded before reports at most MINOR for its first failures,
    /// and its real status from the `failures_before_outage`-th consecutive one. Once failing,
    /// it reports OK again after `successes_before_recovery` consecutive successes. A
    /// dependency that never succeeded reports its real status at once: at startup, a dead
    /// database is dead.
    pub(crate) fn apply(
        &mut self,
        raw: CheckStatus,
        failures_before_outage: u32,
        successes_before_recovery: u32,
    ) -> Verdict {
        if raw == CheckStatus::Ok {
            self.ever_ok = true;
            self.failures = 0;
            if !self.failing {
                return Verdict {
                    reported: CheckStatus::Ok,
                    note: None,
                };
            }
            self.successes += 1;
            if self.successes >= successes_before_recovery {
                self.failing = false;
                self.successes = 0;
                self.held = None;
                return Verdict {
                    reported: CheckStatus::Ok,
                    note: None,
                };
            }
            let held = self.held.unwrap_or(CheckStatus::Minor);
            return Verdict {
                reported: held,
                note: Some(format!(
                    "recovering: {} of {} successes needed before OK",
                    self.successes, successes_before_recovery
                )),
            };
        }

        self.successes = 0;
        self.failures = self.failures.saturating_add(1);
        if !self.failing && self.ever_ok && self.failures < failures_before_outage {
            let reported = raw.no_worse_than(CheckStatus::Minor);
            let note = (reported != raw).then(|| {
                format!(
                    "failure {} of {} before reporting {raw}",
                    self.failures, failures_before_outage
                )
            });
            return Verdict { reported, note };
        }
        self.failing = true;
        self.held = Some(raw);
        Verdict {
            reported: raw,
            note: None,
        }
    }
}

/// Detects a dependency whose reported status changes too often.
///
/// Keeps the last `window` reported statuses; the dependency is flapping once they hold
/// `threshold` changes or more, and stops flapping only when they hold half as many (so the
/// flag itself does not flap).
#[derive(Debug, Clone)]
pub(crate) struct FlapDetector {
    recent: VecDeque<CheckStatus>,
    flapping: bool,
}

impl FlapDetector {
    pub(crate) fn new() -> Self {
        Self {
            recent: VecDeque::new(),
            flapping: false,
        }
    }

    pub(crate) fn record(&mut self, status: CheckStatus, window: usize, threshold: usize) -> bool {
        if window < 2 || threshold == 0 {
            return false;
        }
        if self.recent.len() >= window {
            self.recent.pop_front();
        }
        self.recent.push_back(status);
        let changes = self
            .recent
            .iter()
            .zip(self.recent.iter().skip(1))
            .filter(|(a, b)| a != b)
            .count();
        if changes >= threshold {
            self.flapping = true;
        } else if changes <= threshold / 2 {
            self.flapping = false;
        }
        self.flapping
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CheckStatus::{Major, Minor, Ok, Outage};

    fn run(h: &mut Hysteresis, raws: &[CheckStatus], fbo: u32, sbr: u32) -> Vec<CheckStatus> {
        raws.iter()
            .map(|&r| h.apply(r, fbo, sbr).reported)
            .collect()
    }

    #[test]
    fn three_failures_after_success() {
        let mut h = Hysteresis::default();
        let out = run(&mut h, &[Ok, Outage, Outage, Outage, Outage], 3, 1);
        assert_eq!(out, [Ok, Minor, Minor, Outage, Outage]);
        assert_eq!(h.consecutive_failures(), 4);
    }

    #[test]
    fn never_succeeded_reports_at_once() {
        let mut h = Hysteresis::default();
        assert_eq!(run(&mut h, &[Outage, Ok], 3, 1), [Outage, Ok]);
    }

    #[test]
    fn non_consecutive_failures_never_accumulate() {
        let mut h = Hysteresis::default();
        let raws = [
            Ok, Outage, Outage, Ok, Outage, Outage, Ok, Outage, Outage, Ok,
        ];
        let out = run(&mut h, &raws, 3, 1);
        assert!(out.iter().all(|s| *s <= Minor), "{out:?}");
    }

    #[test]
    fn recovery_needs_consecutive_successes() {
        let mut h = Hysteresis::default();
        let out = run(&mut h, &[Outage, Ok, Ok, Major, Ok, Ok, Ok], 3, 3);
        // Failing from the start; two successes hold OUTAGE; a failure reports MAJOR at once;
        // three successes recover.
        assert_eq!(out, [Outage, Outage, Outage, Major, Major, Major, Ok]);
    }

    #[test]
    fn failures_before_outage_of_one_disables_the_grace() {
        let mut h = Hysteresis::default();
        assert_eq!(run(&mut h, &[Ok, Major], 1, 1), [Ok, Major]);
    }

    #[test]
    fn flapping_sets_and_clears_with_hysteresis() {
        let mut f = FlapDetector::new();
        let mut flags = Vec::new();
        for i in 0..10 {
            let status = if i % 2 == 0 { Ok } else { Outage };
            flags.push(f.record(status, 10, 6));
        }
        assert!(flags[9]);
        assert!(!flags[5]);
        // Steady again: the flag holds until changes drop to 3, then clears.
        let mut steady = Vec::new();
        for _ in 0..10 {
            steady.push(f.record(Ok, 10, 6));
        }
        assert!(steady[0]);
        assert!(!steady[9]);
    }
}
