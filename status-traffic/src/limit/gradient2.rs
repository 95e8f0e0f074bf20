//! Netflix's Gradient2, with a baseline that cannot ratchet upward under overload.

use std::time::Duration;

use super::{Algorithm, Tally};

/// Overloaded windows at the gradient's floor before a probe.
const PROBE_AFTER: u32 = 10;

/// The limit follows the gradient between a long-term baseline round trip and the window's
/// own: `limit × clamp(tolerance × baseline / rtt, 0.5, 1) + queue`, smoothed. Netflix's
/// defaults: starts at 20, between 1 and 200, smoothing 0.2, tolerance 1.5, queue allowance 4,
/// baseline an exponential average over 600 windows (the first 10 averaged plainly).
///
/// Unlike Netflix's:
/// - a window with a drop backs the limit off (×0.9) and teaches the baseline nothing;
/// - the baseline learns only from windows that are not overloaded (round trip within
///   `tolerance × baseline`), so steady modest overload cannot pull it up, and the limit with
///   it, without end (Netflix's issues #134, #137, #176);
/// - when the limit has sat where the gradient's clamp holds it (at most twice the queue
///   allowance) for 10 overloaded windows, it probes for one window at half the limit: a round
///   trip that falls with the load was queueing, and the baseline stays; one that does not
///   (still above three quarters of it) means the work itself got slower, and the baseline
///   starts again from it. Envoy probes by pinning the limit to 3; this probe halves it;
/// - when the window's round trip is under half the baseline, the baseline drifts down (×0.95
///   a window), as Netflix's does.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradient2 {
    limit: f64,
    min: usize,
    max: usize,
    smoothing: f64,
    tolerance: f64,
    queue: f64,
    baseline: Baseline,
    at_floor: u32,
    /// A probe under way: the limit and round trip before it.
    probe: Option<(f64, f64)>,
}

impl Default for Gradient2 {
    fn default() -> Self {
        Self {
            limit: 20.0,
            min: 1,
            max: 200,
            smoothing: 0.2,
            tolerance: 1.5,
            queue: 4.0,
            baseline: Baseline::new(600, 10),
            at_floor: 0,
            probe: None,
        }
    }
}

bounded!(Gradient2);

impl Gradient2 {
    /// How much slower than the baseline the round trip may be before the limit falls; 1.5
    /// by default (at least 1).
    #[must_use]
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance.max(1.0);
        self
    }

    /// The long-term baseline round trip, once there is one.
    #[must_use]
    pub fn baseline(&self) -> Option<Duration> {
        self.baseline.value().map(Duration::from_secs_f64)
    }
}

impl Algorithm for Gradient2 {
    fn limit(&self) -> usize {
        self.limit as usize
    }

    fn update(&mut self, window: &Tally) -> usize {
        if window.drops > 0 {
            self.limit = (self.limit * 0.9).max(self.min as f64);
            return self.limit();
        }
        if window.successes == 0 {
            return self.limit();
        }
        let rtt = window.mean_rtt.as_secs_f64().max(1e-9);
        if let Some((limit_before, rtt_before)) = self.probe.take() {
            if rtt > 0.75 * rtt_before {
                // Half the load, the same round trip: the work got slower.
                self.baseline.reset(rtt);
            } else {
                self.limit = limit_before;
                return self.limit();
            }
        }
        let long = self.baseline.value().unwrap_or(rtt);
        let overloaded = rtt > self.tolerance * long;
        let at_floor = self.limit <= 2.0 * self.queue + self.min as f64;
        self.at_floor = if overloaded && at_floor {
            self.at_floor + 1
        } else {
            0
        };
        if !overloaded {
            self.baseline.add(rtt);
        } else if self.at_floor >= PROBE_AFTER {
            self.at_floor = 0;
            self.probe = Some((self.limit, rtt));
            self.limit = (self.limit / 2.0).max(self.min as f64);
            return self.limit();
        }
        let mut long = self.baseline.value().unwrap_or(rtt);
        if long / rtt > 2.0 {
            self.baseline.scale(0.95);
            long *= 0.95;
        }
        // Too little in flight to say anything about the limit.
        if (window.max_in_flight as f64) * 2.0 < self.limit {
            return self.limit();
        }
        let gradient = (self.tolerance * long / rtt).clamp(0.5, 1.0);
        let wanted = self.limit * gradient + self.queue;
        self.limit = (self.limit * (1.0 - self.smoothing) + wanted * self.smoothing)
            .clamp(self.min as f64, self.max as f64);
        self.limit()
    }
}

/// An exponential average over `window` values, the first `warmup` of them averaged plainly.
#[derive(Debug, Clone, PartialEq)]
struct Baseline {
    window: usize,
    warmup: usize,
    count: usize,
    value: f64,
}

impl Baseline {
    fn new(window: usize, warmup: usize) -> Self {
        Self {
            window,
            warmup,
            count: 0,
            value: 0.0,
        }
    }

    fn value(&self) -> Option<f64> {
        (self.count > 0).then_some(self.value)
    }

    fn add(&mut self, x: f64) {
        self.count += 1;
        if self.count <= self.warmup {
            self.value += (x - self.value) / self.count as f64;
        } else {
            let factor = 2.0 / (self.window as f64 + 1.0);
            self.value += (x - self.value) * factor;
        }
    }

    fn reset(&mut self, x: f64) {
        self.count = 1;
        self.value = x;
    }

    fn scale(&mut self, factor: f64) {
        self.value *= factor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn saturated(limit: usize, rtt: Duration) -> Tally {
        Tally::of(20, 0, rtt, limit)
    }

    /// A service of `capacity` workers taking `work` each, kept saturated: with `limit` in
    /// flight, the round trip grows with the queue.
    fn queueing(capacity: usize, work: Duration, limit: usize) -> Duration {
        work.mul_f64((limit as f64 / capacity as f64).max(1.0))
    }

    #[test]
    fn converges_to_the_fixed_point_of_a_constant_gradient() {
        let mut g = Gradient2::default();
        g.update(&saturated(20, 100 * MS)); // baseline 100 ms
                                            // 200 ms is overloaded (> 150): the gradient stays 1.5 × 100 / 200 = 0.75, and the
                                            // limit goes to queue / (1 − gradient) = 4 / 0.25 = 16.
        for _ in 0..200 {
            let limit = g.limit();
            g.update(&saturated(limit, 200 * MS));
        }
        assert_eq!(g.limit(), 16);
        assert_eq!(
            g.baseline(),
            Some(100 * MS),
            "overloaded windows teach nothing"
        );
    }

    #[test]
    fn does_not_drift_upward_under_steady_overload() {
        // 10 workers of 100 ms, always more demand than the limit.
        let mut g = Gradient2::default();
        g.update(&saturated(10, 100 * MS));
        let mut highest = 0;
        for i in 0..20_000 {
            let limit = g.limit();
            g.update(&saturated(limit, queueing(10, 100 * MS, limit)));
            if i > 100 {
                highest = highest.max(g.limit());
            }
        }
        // The fixed point: L − 15 = 4 (gradient 15 / L), so 19; it never moved past it.
        assert!(highest <= 19, "the limit climbed to {highest}");
        assert!(g.limit() >= 15, "{}", g.limit());
        assert_eq!(g.baseline(), Some(100 * MS));
    }

    #[test]
    fn a_probe_tells_heavy_queueing_from_slower_work() {
        // 2 workers of 100 ms, saturated: the limit settles near 7, where the round trip is
        // 350 ms; probes at half the limit see it fall, so the baseline stays at 100 ms.
        let mut g = Gradient2::default();
        g.update(&saturated(2, 100 * MS));
        let mut highest = 0;
        for i in 0..5_000 {
            let limit = g.limit();
            g.update(&saturated(limit, queueing(2, 100 * MS, limit)));
            if i > 100 {
                highest = highest.max(g.limit());
            }
        }
        assert_eq!(g.baseline(), Some(100 * MS));
        assert!(highest <= 8, "the limit climbed to {highest}");
    }

    #[test]
    fn backs_off_on_drops() {
        let mut g = Gradient2::default();
        g.update(&saturated(20, 100 * MS));
        let before = g.limit();
        g.update(&Tally::of(5, 3, 100 * MS, before));
        assert!(g.limit() < before);
        assert_eq!(g.limit(), (before as f64 * 0.9) as usize);
    }

    #[test]
    fn recovers_from_its_floor_when_the_load_falls() {
        let mut g = Gradient2::default();
        g.update(&saturated(20, 100 * MS));
        for _ in 0..100 {
            let limit = g.limit();
            g.update(&Tally::of(1, 10, 100 * MS, limit));
        }
        assert_eq!(g.limit(), 1);
        for _ in 0..100 {
            let limit = g.limit();
            g.update(&saturated(limit, 100 * MS));
        }
        assert!(g.limit() >= 50, "{}", g.limit());
    }

    #[test]
    fn learns_a_new_baseline_when_the_work_itself_got_slower() {
        let mut g = Gradient2::default().bounds(1, 200);
        for _ in 0..20 {
            let limit = g.limit();
            g.update(&saturated(limit, 100 * MS));
        }
        // From now on the work takes 500 ms whatever the load.
        for _ in 0..300 {
            let limit = g.limit();
            g.update(&saturated(limit, 500 * MS));
        }
        assert_eq!(g.baseline(), Some(500 * MS));
        assert!(g.limit() > 20, "{}", g.limit());
    }
}
