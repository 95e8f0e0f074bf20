//! TCP Vegas: the limit follows the queue estimated from the round trip.

use std::time::Duration;

use super::{log10_step, Algorithm, Tally};

/// Windows with a standing queue before a probe.
const PROBE_AFTER: u32 = 100;

/// TCP Vegas with Netflix's parameters: the queue is estimated as
/// `limit × (1 − no_load_rtt / rtt)`; with `s = max(1, ⌊log10 limit⌋)`, a queue of at most `s`
/// grows the limit by `6s`, under `3s` by `s`, over `6s` shrinks it by `s`. Starts at 20,
/// between 1 and 1,000; a drop shrinks it by `s`.
///
/// Unlike Netflix's, the no-load round trip is the least *window mean*, not the least single
/// sample ever seen: one lucky fast sample cannot become it. After 100 windows in a row with a
/// standing queue (at least `3s`), it probes for one window at half the limit: a round trip
/// that falls with the load was queueing; one that does not (still above three quarters of it)
/// means the work itself got slower, and becomes the new no-load round trip.
#[derive(Debug, Clone, PartialEq)]
pub struct Vegas {
    limit: f64,
    min: usize,
    max: usize,
    no_load: Option<Duration>,
    queued: u32,
    /// A probe under way: the limit and round trip before it.
    probe: Option<(f64, Duration)>,
}

impl Default for Vegas {
    fn default() -> Self {
        Self {
            limit: 20.0,
            min: 1,
            max: 1000,
            no_load: None,
            queued: 0,
            probe: None,
        }
    }
}

bounded!(Vegas);

impl Vegas {
    /// The no-load round trip estimated so far.
    #[must_use]
    pub fn no_load_rtt(&self) -> Option<Duration> {
        self.no_load
    }
}

impl Algorithm for Vegas {
    fn limit(&self) -> usize {
        self.limit as usize
    }

    fn update(&mut self, window: &Tally) -> usize {
        let step = log10_step(self.limit);
        if window.drops > 0 {
            self.limit = (self.limit - step).max(self.min as f64);
            return self.limit();
        }
        if window.successes == 0 {
            return self.limit();
        }
        let mean = window.mean_rtt;
        if let Some((limit_before, rtt_before)) = self.probe.take() {
            if mean.as_secs_f64() > 0.75 * rtt_before.as_secs_f64() {
                self.no_load = Some(mean);
            } else {
                self.limit = limit_before;
                return self.limit();
            }
        }
        let no_load = *self.no_load.get_or_insert(mean);
        self.no_load = Some(no_load.min(mean));
        if (window.max_in_flight as f64) * 2.0 < self.limit {
            return self.limit();
        }
        let no_load = no_load.min(mean).as_secs_f64();
        let rtt = mean.as_secs_f64().max(1e-9);
        let queue = (self.limit * (1.0 - no_load / rtt)).ceil();
        self.queued = if queue >= 3.0 * step {
            self.queued + 1
        } else {
            0
        };
        if self.queued >= PROBE_AFTER {
            self.queued = 0;
            self.probe = Some((self.limit, mean));
            self.limit = (self.limit / 2.0).max(self.min as f64);
            return self.limit();
        }
        let (alpha, beta) = (3.0 * step, 6.0 * step);
        if queue <= step {
            self.limit += beta;
        } else if queue < alpha {
            self.limit += step;
        } else if queue > beta {
            self.limit -= step;
        }
        self.limit = self.limit.clamp(self.min as f64, self.max as f64);
        self.limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn queueing(capacity: usize, work: Duration, limit: usize) -> Duration {
        work.mul_f64((limit as f64 / capacity as f64).max(1.0))
    }

    #[test]
    fn settles_near_the_capacity_plus_a_small_queue() {
        let mut v = Vegas::default();
        for _ in 0..500 {
            let limit = v.limit();
            v.update(&Tally::of(20, 0, queueing(40, 50 * MS, limit), limit));
        }
        let limit = v.limit();
        assert!((40..=48).contains(&limit), "{limit}");
        assert_eq!(v.no_load_rtt(), Some(50 * MS));
    }

    #[test]
    fn learns_that_the_work_got_slower_and_not_that_a_queue_is_normal() {
        let mut v = Vegas::default();
        for _ in 0..1_000 {
            let limit = v.limit();
            v.update(&Tally::of(20, 0, queueing(40, 50 * MS, limit), limit));
        }
        assert_eq!(v.no_load_rtt(), Some(50 * MS), "probes saw the queue drain");
        assert!((40..=48).contains(&v.limit()), "{}", v.limit());
        for _ in 0..1_000 {
            let limit = v.limit();
            v.update(&Tally::of(20, 0, 150 * MS, limit));
        }
        assert_eq!(v.no_load_rtt(), Some(150 * MS));
    }

    #[test]
    fn one_fast_outlier_does_not_become_the_no_load_round_trip() {
        let mut v = Vegas::default();
        // Ten samples of a window: one of 1 ms, nine of 100 ms.
        let mean = (MS + 9 * 100 * MS) / 10;
        v.update(&Tally {
            min_rtt: MS,
            ..Tally::of(10, 0, mean, 20)
        });
        assert_eq!(v.no_load_rtt(), Some(mean));
        assert!(v.no_load_rtt().unwrap() >= 90 * MS);
        // Steady 100 ms from then on is not read as a queue of 99 %.
        for _ in 0..20 {
            let limit = v.limit();
            v.update(&Tally::of(10, 0, 100 * MS, limit));
        }
        assert!(v.limit() >= 20, "{}", v.limit());
    }

    #[test]
    fn backs_off_on_drops_and_recovers_from_its_floor() {
        let mut v = Vegas::default();
        for _ in 0..50 {
            v.update(&Tally::of(5, 5, 50 * MS, 20));
        }
        assert_eq!(v.limit(), 1);
        for _ in 0..10 {
            let limit = v.limit();
            v.update(&Tally::of(20, 0, 50 * MS, limit));
        }
        assert!(v.limit() >= 50, "{}", v.limit());
    }
}
