//! The rule a fleet is judged by: when a data center is healthy for GSLB, when readiness
//! fails open inside it, and when a dependency's failure is shared there.

/// When a data center is healthy (GSLB sends it traffic), when readiness fails open inside
/// it, and when a dependency's failure is shared there.
///
/// Two thresholds, as the cloud load balancers have them: a data center is **removed** from
/// GSLB below `min_serving` serving instances or below `healthy_share` of its fresh ones;
/// below the lower `ready_fail_open_share`, its instances' readiness **fails open** (every
/// instance stays ready: taking more out of a data center that GSLB still sends traffic
/// to, or that is the last one, only concentrates the load on the few left). The removal
/// share must be at or above the fail-open one ([`check`](Self::check)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthRule {
    /// The share of a data center's fresh instances that must be serving (default 0.5).
    pub healthy_share: f64,
    /// ... and at least this many serving instances (default 1).
    pub min_serving: usize,
    /// Below this share of its fresh instances serving, readiness fails open in a data
    /// center: every instance of it stays ready, saying so (default 0: never).
    pub ready_fail_open_share: f64,
    /// A dependency failing at a level on more than this share of a data center's other
    /// fresh instances (default 0.5: more than half) is failing there for everyone: shared.
    pub shared_share: f64,
    /// ... and on at least this many of them (default 2): one other instance is never a
    /// quorum, and a lone forged entry can never make a failure shared.
    pub shared_min: usize,
}

impl Default for HealthRule {
    fn default() -> Self {
        Self {
            healthy_share: 0.5,
            min_serving: 1,
            ready_fail_open_share: 0.0,
            shared_share: 0.5,
            shared_min: 2,
        }
    }
}

impl HealthRule {
    /// Whether the rule holds together: every share within 0 to 1, the removal share at or
    /// above the fail-open one (else readiness would fail open in data centers GSLB still
    /// counts healthy), a shared failure needing more than none.
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_invalid`], saying which.
    pub fn check(&self) -> Result<(), status_core::Error> {
        let share = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(status_core::Error::invalid(format!(
                    "{name} must be within 0 and 1, not {v}"
                )))
            }
        };
        share("the healthy share", self.healthy_share)?;
        share("the readiness fail-open share", self.ready_fail_open_share)?;
        share("the shared share", self.shared_share)?;
        if self.ready_fail_open_share > self.healthy_share {
            return Err(status_core::Error::invalid(format!(
                "the readiness fail-open share ({}) must be at or below the healthy share ({}): \
                 readiness would fail open in data centers GSLB still counts healthy",
                self.ready_fail_open_share, self.healthy_share
            )));
        }
        if self.shared_min == 0 {
            return Err(status_core::Error::invalid(
                "a shared failure needs at least one other instance (shared_min ≥ 1)",
            ));
        }
        Ok(())
    }

    /// Whether a data center of `fresh` instances, `serving` of them, is healthy for GSLB.
    #[must_use]
    pub fn healthy(&self, serving: usize, fresh: usize) -> bool {
        fresh > 0
            && serving >= self.min_serving
            && serving as f64 >= self.healthy_share * fresh as f64
    }

    /// Whether readiness fails open in a data center of `fresh` instances, `serving` of them.
    #[must_use]
    pub fn ready_fails_open(&self, serving: usize, fresh: usize) -> bool {
        fresh > 0 && (serving as f64) < self.ready_fail_open_share * fresh as f64
    }

    /// Whether `failing` of `others` instances is a shared failure by this rule.
    #[must_use]
    pub fn shared(&self, failing: usize, others: usize) -> bool {
        failing >= self.shared_min.max(1)
            && failing <= others
            && failing as f64 > self.shared_share * others as f64
    }
}
