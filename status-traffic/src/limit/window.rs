//! Samples aggregated per window, so that the algorithms see averages, not outliers.

use std::time::Duration;

use super::Outcome;

/// The tally of one window: its samples aggregated, what an [`Algorithm`](super::Algorithm) is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tally {
    /// Pieces of work done.
    pub successes: usize,
    /// Pieces of work dropped (timed out, refused downstream).
    pub drops: usize,
    /// The mean round trip of the successes; zero without any.
    pub mean_rtt: Duration,
    /// The least round trip of the successes; zero without any.
    pub min_rtt: Duration,
    /// The most pieces of work in flight when one of the window's started.
    pub max_in_flight: usize,
}

impl Tally {
    /// A window of `successes` with round trips all `rtt`, and `drops`; for tests and
    /// simulations that drive an algorithm directly.
    #[must_use]
    pub fn of(successes: usize, drops: usize, rtt: Duration, max_in_flight: usize) -> Self {
        let rtt = if successes == 0 { Duration::ZERO } else { rtt };
        Self {
            successes,
            drops,
            mean_rtt: rtt,
            min_rtt: rtt,
            max_in_flight,
        }
    }
}

/// When a window closes: once it holds `min_samples` samples and has lasted the longer of
/// `min_duration` and twice its least round trip. Defaults: 10 samples, 1 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPolicy {
    /// The fewest samples a window holds.
    pub min_samples: usize,
    /// The shortest a window lasts.
    pub min_duration: Duration,
}

impl Default for WindowPolicy {
    fn default() -> Self {
        Self {
            min_samples: 10,
            min_duration: Duration::from_secs(1),
        }
    }
}

/// The window being filled.
#[derive(Debug)]
pub(crate) struct Aggregator {
    policy: WindowPolicy,
    start: Option<Duration>,
    successes: usize,
    drops: usize,
    rtt_sum: Duration,
    min_rtt: Option<Duration>,
    max_in_flight: usize,
}

impl Aggregator {
    pub(crate) fn new(policy: WindowPolicy) -> Self {
        Self {
            policy,
            start: None,
            successes: 0,
            drops: 0,
            rtt_sum: Duration::ZERO,
            min_rtt: None,
            max_in_flight: 0,
        }
    }

    /// Adds a sample ended at `now`; the window, when this sample closes it.
    pub(crate) fn add(
        &mut self,
        now: Duration,
        rtt: Duration,
        in_flight: usize,
        outcome: Outcome,
    ) -> Option<Tally> {
        match outcome {
            Outcome::Ignore => return None,
            Outcome::Success => {
                self.successes += 1;
                self.rtt_sum += rtt;
                self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
            }
            Outcome::Drop => self.drops += 1,
        }
        self.max_in_flight = self.max_in_flight.max(in_flight);
        let start = *self.start.get_or_insert(now);
        let samples = self.successes + self.drops;
        let length = self
            .policy
            .min_duration
            .max(self.min_rtt.unwrap_or_default() * 2);
        if samples < self.policy.min_samples || now.saturating_sub(start) < length {
            return None;
        }
        let mean_rtt = u32::try_from(self.successes)
            .ok()
            .filter(|&n| n > 0)
            .map_or(Duration::ZERO, |n| self.rtt_sum / n);
        let window = Tally {
            successes: self.successes,
            drops: self.drops,
            mean_rtt,
            min_rtt: self.min_rtt.unwrap_or_default(),
            max_in_flight: self.max_in_flight,
        };
        *self = Self::new(self.policy);
        Some(window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn closes_after_enough_samples_and_time() {
        let mut agg = Aggregator::new(WindowPolicy {
            min_samples: 3,
            min_duration: 100 * MS,
        });
        assert!(agg
            .add(Duration::ZERO, 10 * MS, 1, Outcome::Success)
            .is_none());
        assert!(agg.add(50 * MS, 30 * MS, 4, Outcome::Success).is_none());
        assert!(agg
            .add(60 * MS, Duration::ZERO, 9, Outcome::Ignore)
            .is_none());
        assert!(
            agg.add(90 * MS, 99 * MS, 2, Outcome::Drop).is_none(),
            "3 samples, not 100 ms yet"
        );
        let window = agg.add(100 * MS, 20 * MS, 2, Outcome::Success).unwrap();
        assert_eq!(window.successes, 3);
        assert_eq!(window.drops, 1);
        assert_eq!(window.mean_rtt, 20 * MS);
        assert_eq!(window.min_rtt, 10 * MS);
        assert_eq!(window.max_in_flight, 4, "ignored samples do not count");
        assert!(
            agg.add(101 * MS, MS, 1, Outcome::Success).is_none(),
            "a new one"
        );
    }

    #[test]
    fn a_slow_service_gets_windows_of_twice_its_round_trip() {
        let mut agg = Aggregator::new(WindowPolicy {
            min_samples: 1,
            min_duration: 100 * MS,
        });
        assert!(agg
            .add(Duration::ZERO, 400 * MS, 1, Outcome::Success)
            .is_none());
        assert!(agg.add(500 * MS, 400 * MS, 1, Outcome::Success).is_none());
        assert!(agg.add(800 * MS, 400 * MS, 1, Outcome::Success).is_some());
    }
}
