//! Additive increase, multiplicative decrease: TCP's congestion control.

use super::{Algorithm, Tally};

/// Additive increase, multiplicative decrease, with Netflix's defaults: starts at 20, goes ×0.9
/// on a window with a drop, +1 on a window where at least half the limit was in flight, and
/// stays between 1 and 200.
///
/// It reacts to drops only, not to latency: pair it with a deadline that turns slowness into
/// drops.
#[derive(Debug, Clone, PartialEq)]
pub struct Aimd {
    limit: f64,
    min: usize,
    max: usize,
    backoff: f64,
}

impl Default for Aimd {
    fn default() -> Self {
        Self {
            limit: 20.0,
            min: 1,
            max: 200,
            backoff: 0.9,
        }
    }
}

bounded!(Aimd);

impl Aimd {
    /// The factor applied on a drop, in `(0, 1)`; 0.9 by default.
    #[must_use]
    pub fn backoff(mut self, factor: f64) -> Self {
        if factor > 0.0 && factor < 1.0 {
            self.backoff = factor;
        }
        self
    }
}

impl Algorithm for Aimd {
    fn limit(&self) -> usize {
        self.limit as usize
    }

    fn update(&mut self, window: &Tally) -> usize {
        if window.drops > 0 {
            self.limit = (self.limit * self.backoff).floor().max(self.min as f64);
        } else if window.max_in_flight * 2 >= self.limit() {
            self.limit = (self.limit + 1.0).min(self.max as f64);
        }
        self.limit()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn window(drops: usize, max_in_flight: usize) -> Tally {
        Tally::of(10, drops, Duration::from_millis(10), max_in_flight)
    }

    #[test]
    fn grows_by_one_when_used_and_backs_off_on_drops() {
        let mut aimd = Aimd::default();
        assert_eq!(aimd.update(&window(0, 10)), 21);
        assert_eq!(aimd.update(&window(0, 3)), 21, "idle capacity: no growth");
        assert_eq!(aimd.update(&window(1, 21)), 18, "21 × 0.9, down");
    }

    #[test]
    fn recovers_from_its_floor_when_the_load_falls() {
        let mut aimd = Aimd::default();
        for _ in 0..100 {
            aimd.update(&window(3, 20));
        }
        assert_eq!(aimd.limit(), 1);
        for _ in 0..30 {
            let limit = aimd.limit();
            aimd.update(&window(0, limit));
        }
        assert_eq!(aimd.limit(), 31);
    }
}
