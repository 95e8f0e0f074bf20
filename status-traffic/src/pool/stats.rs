//! One node's recent record: six buckets aged every five seconds, and a sticky bucket.

use std::time::Duration;

/// Buckets of history per node.
pub const BUCKETS: usize = 6;
/// How long a bucket is the newest.
pub const BUCKET_PERIOD: Duration = Duration::from_secs(5);
/// How much more a bucket weighs than the next older one.
pub const RECENCY: f64 = 3.0;
/// The least success rate of a node whose only data is the sticky bucket, divided by the
/// number of nodes.
pub const STICKY_FLOOR: f64 = 0.0001;

/// The most calls a bucket older than the newest counts as: one with more counts as this many,
/// in its own proportion of successes.
pub(crate) const BUCKET_EVIDENCE: u64 = 10;

/// Finished and successful requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Requests that finished, however.
    pub finished: u64,
    /// Of those, the successful ones.
    pub succeeded: u64,
}

impl Bucket {
    fn is_empty(self) -> bool {
        self.finished == 0
    }
}

/// A node's history, told the time: the newest bucket takes what finishes; every
/// [`BUCKET_PERIOD`] (on a clock shared by every node) the oldest is aged out, kept as the
/// sticky bucket if it held data, and an empty one starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStats {
    /// Oldest first.
    buckets: [Bucket; BUCKETS],
    /// The period the newest bucket belongs to.
    period: u64,
    sticky: Option<Bucket>,
}

impl Default for NodeStats {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeStats {
    /// A node without history: it competes as a perfectly healthy one.
    #[must_use]
    pub fn new() -> Self {
        Self {
            buckets: [Bucket::default(); BUCKETS],
            period: 0,
            sticky: None,
        }
    }

    /// Ages the buckets up to `now`.
    pub fn advance(&mut self, now: Duration) {
        let period = period_of(now);
        if period <= self.period {
            return;
        }
        // Past a full turn, every bucket has aged out; only the last with data stays sticky.
        let steps = (period - self.period).min(BUCKETS as u64 + 1);
        for _ in 0..steps {
            let oldest = self.buckets[0];
            if !oldest.is_empty() {
                self.sticky = Some(oldest);
            }
            self.buckets.rotate_left(1);
            self.buckets[BUCKETS - 1] = Bucket::default();
        }
        self.period = period;
    }

    /// Records a request that finished at `now`, successfully or not.
    pub fn record(&mut self, now: Duration, success: bool) {
        self.advance(now);
        let newest = &mut self.buckets[BUCKETS - 1];
        newest.finished += 1;
        newest.succeeded += u64::from(success);
    }

    /// The success rate at `now` among `nodes` nodes:
    /// - with requests in the history, successes over finished, each bucket weighing
    ///   [`RECENCY`] times the next older one; every bucket but the newest counts as at most
    ///   ten calls (in its own proportion of successes). A node's past volume cannot outvote
    ///   its present: a node that failed under heavy traffic and now succeeds on the little
    ///   traffic the weight floor gives it is believed after about ten successes, not after
    ///   as many as it failed; and a node that served thousands of calls and now hangs is
    ///   seen after a handful of drops (the seed sums raw counts; this is where we depart
    ///   from it);
    /// - with only the sticky bucket, its rate, at least [`STICKY_FLOOR`] / `nodes`: a node
    ///   idle since it failed keeps a small chance;
    /// - with nothing at all, 1: a new node competes equally.
    pub fn rate(&mut self, now: Duration, nodes: usize) -> f64 {
        self.advance(now);
        let (mut finished, mut succeeded, mut weight) = (0.0, 0.0, 1.0);
        for (i, bucket) in self.buckets.iter().enumerate() {
            // An older bucket counts as BUCKET_EVIDENCE calls at most, in its own proportion;
            // the newest counts whole.
            let older = i + 1 < BUCKETS;
            let scale = if older && bucket.finished > BUCKET_EVIDENCE {
                BUCKET_EVIDENCE as f64 / bucket.finished as f64
            } else {
                1.0
            };
            finished += weight * scale * bucket.finished as f64;
            succeeded += weight * scale * bucket.succeeded as f64;
            weight *= RECENCY;
        }
        if finished > 0.0 {
            return succeeded / finished;
        }
        match self.sticky {
            Some(sticky) => {
                let rate = sticky.succeeded as f64 / sticky.finished as f64;
                rate.max(STICKY_FLOOR / nodes.max(1) as f64)
            }
            None => 1.0,
        }
    }

    /// The buckets, oldest first, and the sticky one.
    #[must_use]
    pub fn buckets(&self) -> (&[Bucket; BUCKETS], Option<Bucket>) {
        (&self.buckets, self.sticky)
    }
}

fn period_of(now: Duration) -> u64 {
    (now.as_millis() / BUCKET_PERIOD.as_millis()) as u64
}

/// The least weight of a node: its chance to be tried, and so to show it recovered, survives
/// the cube. Against healthy nodes of weight 1, a node failing for good costs about this
/// share of the calls divided by their number (0.5 % of calls with three nodes).
pub const WEIGHT_FLOOR: f64 = 0.01;

/// A node's weight in the shuffle: its success rate, cubed, and at least [`WEIGHT_FLOOR`].
///
/// The floor is what brings a recovered node back: once its buckets hold only failures its
/// rate is 0, and without a floor it would never be tried again while others have capacity,
/// after any failure long enough for its older buckets to age out, or after every node failed
/// together.
#[must_use]
pub fn weight(rate: f64) -> f64 {
    (rate * rate * rate).max(WEIGHT_FLOOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn a_new_node_is_perfectly_healthy() {
        assert_eq!(NodeStats::new().rate(Duration::ZERO, 3), 1.0);
    }

    #[test]
    fn recent_buckets_weigh_three_times_the_older() {
        let mut stats = NodeStats::new();
        // Ten failures, then a period later ten successes.
        for _ in 0..10 {
            stats.record(S, false);
        }
        for _ in 0..10 {
            stats.record(6 * S, true);
        }
        // (3 × 10) / (3 × 10 + 1 × 10)
        assert!((stats.rate(6 * S, 3) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn a_bucket_counts_as_ten_calls_at_most() {
        let mut stats = NodeStats::new();
        // A thousand failures, then a period later ten successes: the older bucket as ten
        // failures.
        for _ in 0..1000 {
            stats.record(S, false);
        }
        for _ in 0..10 {
            stats.record(6 * S, true);
        }
        // (3 × 10) / (3 × 10 + 1 × 10), as if the older bucket held ten calls.
        assert!((stats.rate(6 * S, 3) - 0.75).abs() < 1e-12);
        // The newest counts whole: thirty successes now outweigh the thousand failures more.
        for _ in 0..20 {
            stats.record(6 * S, true);
        }
        assert!((stats.rate(6 * S, 3) - 0.9).abs() < 1e-12);
        // In its own proportion: 600 of 1000 count as 6 of 10 once older.
        let mut stats = NodeStats::new();
        for i in 0..1000 {
            stats.record(S, i % 5 < 3);
        }
        assert!((stats.rate(6 * S, 3) - 0.6).abs() < 1e-12);
    }

    #[test]
    fn aged_out_data_stays_sticky_with_a_floor() {
        let mut stats = NodeStats::new();
        stats.record(S, false);
        // Still in the history for six periods (until 30 s).
        assert_eq!(stats.rate(29 * S, 4), 0.0);
        // Then only the sticky bucket: 0 % success, floored at 0.0001 / 4.
        assert_eq!(stats.rate(30 * S, 4), 0.000_025);
        // However long it stays idle.
        assert_eq!(stats.rate(3600 * S, 4), 0.000_025);
        let (buckets, sticky) = stats.buckets();
        assert!(buckets.iter().all(|b| b.finished == 0));
        assert_eq!(
            sticky,
            Some(Bucket {
                finished: 1,
                succeeded: 0
            })
        );
    }

    #[test]
    fn the_sticky_bucket_is_the_last_with_data() {
        let mut stats = NodeStats::new();
        stats.record(S, true);
        stats.record(11 * S, false);
        // At 35 s the first bucket (0–5 s) has aged out, the one of 10–15 s not yet.
        assert_eq!(stats.rate(35 * S, 1), 0.0);
        assert_eq!(
            stats.buckets().1,
            Some(Bucket {
                finished: 1,
                succeeded: 1
            })
        );
        // At 45 s the failure has aged out too and is the sticky bucket.
        assert_eq!(stats.rate(45 * S, 1), STICKY_FLOOR);
    }

    #[test]
    fn weight_is_the_rate_cubed() {
        assert_eq!(weight(0.5), 0.125);
        assert_eq!(weight(1.0), 1.0);
    }
}
