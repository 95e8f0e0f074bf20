//! Background scheduling: one task a dependency, and the watchdog.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::entry::Entry;
use super::Inner;
use crate::Rng;

/// Checks `entry` every period until it is removed or the registry dropped.
pub(super) async fn schedule(registry: Weak<Inner>, entry: Arc<Entry>, mut jitter: Jitter) {
    let period = entry.info().period;
    loop {
        let (clock, run) = {
            let Some(inner) = registry.upgrade() else {
                return;
            };
            if !inner.deps.is_registered(&entry) {
                return;
            }
            let Some(run) = inner.start_run(&entry) else {
                return;
            };
            (inner.clock.clone(), run)
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
/// Its numbers come from the registry's seed.
pub(super) struct Jitter {
    rng: Rng,
    fraction: f64,
}

impl Jitter {
    pub(super) fn new(rng: Rng, fraction: f64) -> Self {
        Self { rng, fraction }
    }

    fn spread(&mut self, period: Duration) -> Duration {
        if self.fraction <= 0.0 {
            return period;
        }
        let unit = self.rng.next_f64();
        period.mul_f64(1.0 + self.fraction * (2.0 * unit - 1.0))
    }
}
