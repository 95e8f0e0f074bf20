//! Background scheduling: one task a dependency, and the watchdog.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::entry::Entry;
use super::Inner;

/// Checks `entry` every period until it is removed or the registry dropped.
pub(super) async fn schedule(registry: Weak<Inner>, entry: Arc<Entry>, mut jitter: Jitter) {
    let period = entry.info().period;
    loop {
        let (clock, run) = {
            let Some(inner) = registry.upgrade() else {
                return;
            };
            if !inner.is_registered(&entry) {
                return;
            }
            (inner.clock.clone(), inner.start_run(&entry))
        };
        let started = clock.now();
        run.await;
        let next = started + jitter.spread(period);
        clock.sleep_until(next.max(clock.now())).await;
    }
}

/// Sweeps for staleness every `interval` until the registry is dropped.
pub(super) async fn watch(registry: Weak<Inner>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Some(inner) = registry.upgrade() else {
            return;
        };
        inner.sweep();
    }
}

/// Spreads periods by ± a fraction, so a fleet started together does not check in step.
pub(super) struct Jitter {
    state: u64,
    fraction: f64,
}

impl Jitter {
    pub(super) fn new(seed: u64, fraction: f64) -> Self {
        Self {
            state: seed | 1,
            fraction,
        }
    }

    fn spread(&mut self, period: Duration) -> Duration {
        if self.fraction <= 0.0 {
            return period;
        }
        // xorshift64*: plenty for spreading timers.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let bits = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        #[allow(clippy::cast_precision_loss)] // 53 bits fit an f64 exactly
        let unit = bits as f64 / (1u64 << 53) as f64;
        period.mul_f64(1.0 + self.fraction * (2.0 * unit - 1.0))
    }
}
