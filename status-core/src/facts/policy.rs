//! [`ServePolicy`]: which system levels serve traffic.

use crate::CheckStatus;

/// Which system levels serve traffic: what `/healthcheck/summary` answers with a success
/// code and gRPC's `""` answers SERVING, so that the two never disagree. The registry owns
/// it ([`RegistryBuilder::serve_policy`](crate::RegistryBuilder::serve_policy)); the
/// transports only render it, HTTP's code map choosing which success or failure code.
///
/// The default is what load balancers expect: OK, MINOR and MAJOR serve, OUTAGE fails.
///
/// # Example
///
/// ```
/// use status_core::{CheckStatus, ServePolicy};
///
/// let policy = ServePolicy::failing_from(CheckStatus::Major);
/// assert!(policy.serves(CheckStatus::Minor));
/// assert!(!policy.serves(CheckStatus::Major));
/// assert!(ServePolicy::default().serves(CheckStatus::Major));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServePolicy {
    fails_from: CheckStatus,
}

impl Default for ServePolicy {
    fn default() -> Self {
        Self {
            fails_from: CheckStatus::Outage,
        }
    }
}

impl ServePolicy {
    /// A policy under which `level` and every worse level fail. OK always serves: a policy
    /// failing from OK is one failing from MINOR (an instance that never serves is a drain,
    /// which [`Registry::drain`](crate::Registry::drain) says with a reason).
    #[must_use]
    pub const fn failing_from(level: CheckStatus) -> Self {
        Self {
            fails_from: match level {
                CheckStatus::Ok => CheckStatus::Minor,
                level => level,
            },
        }
    }

    /// The best level that fails.
    #[must_use]
    pub const fn fails_from(self) -> CheckStatus {
        self.fails_from
    }

    /// Whether the system serves at `level`.
    #[must_use]
    pub fn serves(self, level: CheckStatus) -> bool {
        level < self.fails_from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_below_the_level_it_fails_from_and_ok_always() {
        for fails_from in CheckStatus::ALL {
            let policy = ServePolicy::failing_from(fails_from);
            assert!(policy.serves(CheckStatus::Ok));
            for level in CheckStatus::ALL {
                if level != CheckStatus::Ok {
                    assert_eq!(
                        policy.serves(level),
                        level < fails_from,
                        "{fails_from} {level}"
                    );
                }
            }
        }
    }
}
