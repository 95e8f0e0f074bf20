//! The hedging policy: when to send a second copy, and how many the budget allows. Pure:
//! told each call's start, whether its delay passed unanswered, and its latency.

use std::collections::VecDeque;
use std::time::Duration;

/// After how long an unanswered call is hedged.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum HedgeDelay {
    /// Always this long.
    Fixed(Duration),
    /// The given percentile (0 to 1) of recent calls' latencies, at least `min`. No call is
    /// hedged until [`HedgeSettings::min_samples`] latencies are known.
    Percentile {
        /// Which percentile: 0.95 hedges the slowest twentieth.
        percentile: f64,
        /// The least delay.
        min: Duration,
    },
}

/// How a [`Hedger`] decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgeSettings {
    /// After how long an unanswered call is hedged.
    pub delay: HedgeDelay,
    /// The extra load allowed, as a share of calls: each call earns this much of a hedge,
    /// and a hedge spends one. Default 0.1 (at most one call in ten hedged, on average).
    pub budget: f64,
    /// The most hedges saved up for a burst of slow calls. Default 10.
    pub burst: f64,
    /// Latencies kept for the percentile. Default 1,000.
    pub window: usize,
    /// Latencies known before a percentile delay hedges anything. Default 20.
    pub min_samples: usize,
}

impl Default for HedgeSettings {
    /// Hedge past the 95th percentile of the last 1,000 calls (at least 1 ms), at most one
    /// call in ten.
    fn default() -> Self {
        Self {
            delay: HedgeDelay::Percentile {
                percentile: 0.95,
                min: Duration::from_millis(1),
            },
            budget: 0.1,
            burst: 10.0,
            window: 1000,
            min_samples: 20,
        }
    }
}

/// What a [`Hedger`] did since it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct HedgeStats {
    /// Calls started.
    pub calls: u64,
    /// Second copies sent.
    pub hedges: u64,
    /// Calls whose second copy answered first.
    pub hedge_wins: u64,
    /// Calls past their delay that the budget did not let hedge.
    pub refused: u64,
}

/// The hedging policy's state; see the [module docs](super).
#[derive(Debug, Clone)]
pub struct Hedger {
    settings: HedgeSettings,
    tokens: f64,
    latencies: VecDeque<Duration>,
    /// The percentile delay, recomputed every [`RECOMPUTE_EVERY`] latencies.
    delay: Option<Duration>,
    since_recompute: usize,
    stats: HedgeStats,
}

/// How many latencies are recorded between two computations of a percentile delay.
const RECOMPUTE_EVERY: usize = 64;

impl Hedger {
    /// A hedger with a full burst of budget.
    #[must_use]
    pub fn new(settings: HedgeSettings) -> Self {
        let delay = match settings.delay {
            HedgeDelay::Fixed(delay) => Some(delay),
            HedgeDelay::Percentile { .. } => None,
        };
        Self {
            tokens: settings.burst.max(1.0),
            latencies: VecDeque::with_capacity(settings.window.min(65_536)),
            delay,
            since_recompute: 0,
            stats: HedgeStats::default(),
            settings,
        }
    }

    /// A call starts: it earns its share of the budget. Answers the delay after which it
    /// would be hedged, or `None` when no delay is known yet.
    pub fn start(&mut self) -> Option<Duration> {
        self.stats.calls += 1;
        self.tokens = (self.tokens + self.settings.budget).min(self.settings.burst.max(1.0));
        self.delay
    }

    /// The call's delay passed without an answer: whether to send the second copy now (the
    /// budget pays for it) or not (counted as refused).
    pub fn try_hedge(&mut self) -> bool {
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.stats.hedges += 1;
            true
        } else {
            self.stats.refused += 1;
            false
        }
    }

    /// The call's first answer came `latency` after it started, from the second copy or not.
    pub fn finish(&mut self, latency: Duration, by_hedge: bool) {
        if by_hedge {
            self.stats.hedge_wins += 1;
        }
        let HedgeDelay::Percentile { percentile, min } = self.settings.delay else {
            return;
        };
        if self.latencies.len() == self.settings.window.max(1) {
            self.latencies.pop_front();
        }
        self.latencies.push_back(latency);
        self.since_recompute += 1;
        let known = self.latencies.len();
        if known >= self.settings.min_samples.max(1)
            && (self.delay.is_none() || self.since_recompute >= RECOMPUTE_EVERY)
        {
            self.since_recompute = 0;
            let mut sorted: Vec<Duration> = self.latencies.iter().copied().collect();
            sorted.sort_unstable();
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let at = ((known - 1) as f64 * percentile.clamp(0.0, 1.0)).round() as usize;
            self.delay = Some(sorted[at].max(min));
        }
    }

    /// What it did since it was made.
    #[must_use]
    pub fn stats(&self) -> HedgeStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_percentile_delay_follows_the_latencies_once_known() {
        let mut h = Hedger::new(HedgeSettings::default());
        assert_eq!(h.start(), None, "nothing known: no hedging");
        for i in 1..=20 {
            h.finish(MS * i, false);
        }
        // 20 latencies, 1 to 20 ms: the 95th percentile at index round(19 × 0.95) = 18.
        assert_eq!(h.start(), Some(MS * 19));
        // It moves only every 64 latencies.
        for _ in 0..63 {
            h.finish(MS * 100, false);
        }
        assert_eq!(h.start(), Some(MS * 19));
        h.finish(MS * 100, false);
        assert_eq!(h.start(), Some(MS * 100));
    }

    #[test]
    fn the_budget_caps_hedges_at_their_share_of_calls() {
        let mut h = Hedger::new(HedgeSettings {
            delay: HedgeDelay::Fixed(MS * 10),
            ..HedgeSettings::default()
        });
        // Every call slow: a burst of ten first, then one in ten.
        let mut hedged = 0;
        for _ in 0..1000 {
            assert_eq!(h.start(), Some(MS * 10));
            if h.try_hedge() {
                hedged += 1;
            }
        }
        // Never more than the burst plus a tenth of the calls; about that many.
        assert!(hedged <= 10 + 100, "{hedged}");
        assert!(hedged >= 100 + 9, "{hedged}");
        let stats = h.stats();
        assert_eq!(stats.calls, 1000);
        assert_eq!(stats.hedges + stats.refused, 1000);
        assert_eq!(stats.hedges, hedged);
    }

    #[test]
    fn a_fixed_delay_hedges_from_the_first_call() {
        let mut h = Hedger::new(HedgeSettings {
            delay: HedgeDelay::Fixed(MS * 50),
            ..HedgeSettings::default()
        });
        assert_eq!(h.start(), Some(MS * 50));
        assert!(h.try_hedge());
        h.finish(MS * 60, true);
        assert_eq!(h.stats().hedge_wins, 1);
    }
}
