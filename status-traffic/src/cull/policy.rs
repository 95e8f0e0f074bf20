//! The cull policy, pure: told the time, the window's failures and the instance's state,
//! and the culler's step around it (when to look next, and what a look comes to once the
//! budget answered), so that the Tokio culler and the simulator run the same code and draw
//! the same random numbers from the same seed.

use std::time::Duration;

use status_core::{CheckStatus, Rng};

use super::budget::{BudgetError, Grant};

/// The wait before the culler's next look: `interval` ± 20 %, from one number of `rng` (so
/// that a fleet's cullers, seeded apart, never look together).
#[must_use]
pub fn next_look(interval: Duration, rng: &mut Rng) -> Duration {
    interval.mul_f64(0.8 + 0.4 * rng.next_f64())
}

/// What one look came to: the policy's decision, and the budget's answer when it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    /// Under the threshold.
    Healthy,
    /// Over it, already out of rotation.
    Leaving,
    /// Over it, too young.
    TooYoung,
    /// Over it, and the budget granted token number `used`: take the `Cull` hold.
    Cull {
        /// The token's number in the window.
        used: u64,
    },
    /// Over it, the budget spent (`used` tokens in the window).
    Spent {
        /// Tokens used in the window.
        used: u64,
    },
    /// Over it, the budget's store did not know it (new, or restarted empty): counted spent
    /// for `left` more.
    Unknown {
        /// Until the budget grants again.
        left: Duration,
    },
    /// Over it, the budget could not be asked: never cull without coordination.
    Unreachable(String),
    /// Over it, while a dependency the instance's traffic depends on fails for most of its
    /// data center too: the failures are the fleet's, not this instance's, and a restart
    /// would not mend them. The budget is not asked.
    Shared(String),
}

impl Look {
    /// A look at `decision`, before any budget is asked; `None` for
    /// [`Decision::AskBudget`], which [`Look::granted`] answers.
    #[must_use]
    pub fn of(decision: Decision) -> Option<Self> {
        match decision {
            Decision::Healthy { .. } => Some(Self::Healthy),
            Decision::Leaving { .. } => Some(Self::Leaving),
            Decision::TooYoung { .. } => Some(Self::TooYoung),
            Decision::AskBudget { .. } => None,
        }
    }

    /// A look whose budget answered `grant`.
    #[must_use]
    pub fn granted(grant: Result<Grant, BudgetError>) -> Self {
        match grant {
            Ok(Grant::Token { used }) => Self::Cull { used },
            Ok(Grant::Spent { used }) => Self::Spent { used },
            Ok(Grant::Unknown { left }) => Self::Unknown { left },
            Err(e) => Self::Unreachable(e.to_string()),
        }
    }

    /// How the culler reports it: OK under the threshold, MAJOR once culled, MINOR otherwise.
    #[must_use]
    pub fn status(&self) -> CheckStatus {
        match self {
            Self::Healthy => CheckStatus::Ok,
            Self::Cull { .. } => CheckStatus::Major,
            _ => CheckStatus::Minor,
        }
    }

    /// What the culler says of it, after `seen` (what it counted).
    #[must_use]
    pub fn message(&self, seen: &str) -> String {
        match self {
            Self::Healthy => seen.to_owned(),
            Self::Leaving => format!("{seen}; not culling: already out of rotation"),
            Self::TooYoung => {
                format!("{seen}; not culling: up for less than the minimum uptime")
            }
            Self::Cull { used } => format!("culled: {seen}; budget token {used}"),
            Self::Spent { used } => {
                format!("{seen}; not culling: the budget is spent ({used} used)")
            }
            Self::Unknown { left } => format!(
                "{seen}; not culling: the budget's store did not know it (new, or restarted \
                 empty), so it counts as spent for one window: {} s left",
                left.as_secs().max(1)
            ),
            Self::Unreachable(e) => format!("{seen}; not culling: {e}"),
            Self::Shared(why) => format!("{seen}; not culling, the failure is shared: {why}"),
        }
    }
}

/// When an instance may cull itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CullPolicy {
    /// Failures in the window at which the instance counts as broken.
    pub threshold: u64,
    /// How long an instance must have run before it may cull itself: a fresh one's errors
    /// are more likely its dependencies' warm-up than a wedged state.
    pub min_uptime: Duration,
}

/// What the policy decided at one look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Under the threshold: nothing to do.
    Healthy {
        /// Failures in the window.
        failures: u64,
    },
    /// Over the threshold, but the instance is already leaving (draining, shutting down,
    /// culled): culling would spend a token for nothing.
    Leaving {
        /// Failures in the window.
        failures: u64,
    },
    /// Over the threshold, but too young to cull itself.
    TooYoung {
        /// Failures in the window.
        failures: u64,
    },
    /// Over the threshold: ask the budget for a token.
    AskBudget {
        /// Failures in the window.
        failures: u64,
    },
}

impl CullPolicy {
    /// The decision for `failures` in the window after `uptime`, `leaving` if any rotation
    /// hold is in force.
    #[must_use]
    pub fn decide(&self, failures: u64, uptime: Duration, leaving: bool) -> Decision {
        if failures < self.threshold {
            Decision::Healthy { failures }
        } else if leaving {
            Decision::Leaving { failures }
        } else if uptime < self.min_uptime {
            Decision::TooYoung { failures }
        } else {
            Decision::AskBudget { failures }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_old_enough_instance_still_in_rotation_asks() {
        let policy = CullPolicy {
            threshold: 10,
            min_uptime: Duration::from_secs(60),
        };
        let old = Duration::from_secs(120);
        assert_eq!(
            policy.decide(9, old, false),
            Decision::Healthy { failures: 9 }
        );
        assert_eq!(
            policy.decide(10, old, false),
            Decision::AskBudget { failures: 10 }
        );
        assert_eq!(
            policy.decide(50, old, true),
            Decision::Leaving { failures: 50 }
        );
        assert_eq!(
            policy.decide(50, Duration::from_secs(59), false),
            Decision::TooYoung { failures: 50 }
        );
        // Leaving wins over young: nothing would be asked either way, leaving says why.
        assert_eq!(
            policy.decide(50, Duration::ZERO, true),
            Decision::Leaving { failures: 50 }
        );
    }
}
