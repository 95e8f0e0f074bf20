//! The cull policy, pure: told the time, the window's failures and the instance's state.

use std::time::Duration;

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
