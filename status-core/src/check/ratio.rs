//! A status from the ratio of failures over a sliding window.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::{Check, CheckOutcome, DynCheck, Threshold};
use crate::sync::lock;
use crate::{CheckStatus, Clock};

/// How many buckets a window is cut into: the window slides by a tenth of its length.
const BUCKETS: u32 = 10;

/// A check graded by the share of failed calls over a sliding window.
///
/// Calls are counted through a [`FailureRecorder`] (from live traffic, say, in a client
/// wrapper) and, when a probe is set, by running it on every check. With fewer calls than
/// `min_samples` in the window the check is OK: too little traffic says nothing.
///
/// # Example
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use status_core::check::{Check, FailureRatio, Threshold};
/// use status_core::CheckStatus;
///
/// // OK up to 1% failures, MINOR up to 5%, MAJOR up to 25%, OUTAGE above.
/// let threshold = Threshold::at_most(0.01, 0.05, 0.25).unwrap();
/// let ratio = FailureRatio::new(Duration::from_secs(60), threshold).min_samples(10);
/// let recorder = ratio.recorder();
/// for i in 0..100 {
///     recorder.record(i % 10 != 0); // 10% of calls fail
/// }
/// assert_eq!(ratio.check().await.status(), CheckStatus::Major);
/// # }
/// ```
pub struct FailureRatio {
    window: Arc<Window>,
    threshold: Threshold,
    min_samples: u64,
    probe: Option<Box<dyn DynCheck>>,
}

/// Records calls into a [`FailureRatio`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct FailureRecorder {
    window: Arc<Window>,
}

struct Window {
    /// The clock and the instant buckets count from: the registry's once the check is
    /// registered (see [`Check::attach`]), else the one it was made with.
    clock: OnceLock<(Clock, Instant)>,
    length: Duration,
    bucket: Duration,
    buckets: Mutex<Vec<Bucket>>,
}

#[derive(Clone, Copy, Default)]
struct Bucket {
    number: u64,
    ok: u64,
    failed: u64,
}

impl FailureRatio {
    /// Failure ratios over the last `window` graded by `threshold` (ratios from 0.0 to 1.0).
    ///
    /// Time is read from the registry's clock once the check is registered; calls recorded
    /// before that start it on Tokio's clock.
    ///
    /// # Panics
    ///
    /// If `window` is zero.
    #[must_use]
    pub fn new(window: Duration, threshold: Threshold) -> Self {
        Self::build(window, threshold, OnceLock::new())
    }

    /// As [`new`](Self::new), reading time from `clock`.
    ///
    /// # Panics
    ///
    /// If `window` is zero.
    #[must_use]
    pub fn with_clock(window: Duration, threshold: Threshold, clock: Clock) -> Self {
        let origin = clock.now();
        Self::build(window, threshold, OnceLock::from((clock, origin)))
    }

    fn build(window: Duration, threshold: Threshold, clock: OnceLock<(Clock, Instant)>) -> Self {
        assert!(!window.is_zero(), "a failure ratio window cannot be empty");
        let bucket = (window / BUCKETS).max(Duration::from_millis(1));
        Self {
            window: Arc::new(Window {
                clock,
                length: window,
                bucket,
                buckets: Mutex::new(vec![Bucket::default(); BUCKETS as usize]),
            }),
            threshold,
            min_samples: 1,
            probe: None,
        }
    }

    /// Below `min_samples` calls in the window the check reports OK (default 1).
    #[must_use]
    pub fn min_samples(mut self, min_samples: u64) -> Self {
        self.min_samples = min_samples.max(1);
        self
    }

    /// Runs `probe` on every check and counts it as a call: OK is a success, anything else a
    /// failure.
    #[must_use]
    pub fn probe(mut self, probe: impl Check) -> Self {
        self.probe = Some(Box::new(probe));
        self
    }

    /// A handle to record calls with.
    #[must_use]
    pub fn recorder(&self) -> FailureRecorder {
        FailureRecorder {
            window: Arc::clone(&self.window),
        }
    }

    /// Failed and total calls in the window now.
    #[must_use]
    pub fn counts(&self) -> (u64, u64) {
        self.window.counts()
    }
}

impl Check for FailureRatio {
    async fn check(&self) -> CheckOutcome {
        if let Some(probe) = &self.probe {
            let outcome = probe.check_boxed().await;
            self.window.record(outcome.status() == CheckStatus::Ok);
        }
        let (failed, total) = self.window.counts();
        let seconds = self.window.length.as_secs_f64();
        if total < self.min_samples {
            return CheckOutcome::new(
                CheckStatus::Ok,
                format!("{total} calls in the last {seconds}s, too few to judge"),
            );
        }
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        let ratio = failed as f64 / total as f64;
        let status = self.threshold.status_of(ratio);
        CheckOutcome::new(
            status,
            format!(
                "{:.1}% of {total} calls failed in the last {seconds}s",
                ratio * 100.0
            ),
        )
        .with_value_in(ratio, super::Unit::Ratio)
    }

    fn attach(&self, clock: &Clock) {
        let origin = clock.now();
        let _ = self.window.clock.set((clock.clone(), origin));
    }
}

impl FailureRecorder {
    /// Records one call.
    pub fn record(&self, success: bool) {
        self.window.record(success);
    }

    /// Records a successful call.
    pub fn success(&self) {
        self.record(true);
    }

    /// Records a failed call.
    pub fn failure(&self) {
        self.record(false);
    }
}

impl Window {
    fn current_number(&self) -> u64 {
        let (clock, origin) = self.clock.get_or_init(|| {
            let clock = Clock::tokio();
            let origin = clock.now();
            (clock, origin)
        });
        let elapsed = clock.since(*origin);
        u64::try_from(elapsed.as_nanos() / self.bucket.as_nanos()).unwrap_or(u64::MAX)
    }

    fn record(&self, success: bool) {
        let number = self.current_number();
        let mut buckets = lock(&self.buckets);
        let len = buckets.len() as u64;
        #[allow(clippy::cast_possible_truncation)] // modulo BUCKETS
        let bucket = &mut buckets[(number % len) as usize];
        if bucket.number != number {
            *bucket = Bucket {
                number,
                ..Bucket::default()
            };
        }
        if success {
            bucket.ok += 1;
        } else {
            bucket.failed += 1;
        }
    }

    fn counts(&self) -> (u64, u64) {
        let number = self.current_number();
        let buckets = lock(&self.buckets);
        let oldest = number.saturating_sub(buckets.len() as u64 - 1);
        buckets
            .iter()
            .filter(|b| b.number >= oldest && b.number <= number && b.ok + b.failed > 0)
            .fold((0, 0), |(failed, total), b| {
                (failed + b.failed, total + b.ok + b.failed)
            })
    }
}

impl fmt::Debug for FailureRatio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailureRatio")
            .field("window", &self.window.length)
            .field("threshold", &self.threshold)
            .field("min_samples", &self.min_samples)
            .field("probe", &self.probe.is_some())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window")
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;

    fn threshold() -> Threshold {
        Threshold::at_most(0.0, 0.1, 0.5).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn old_calls_slide_out_of_the_window() {
        let ratio = FailureRatio::new(Duration::from_secs(10), threshold());
        let recorder = ratio.recorder();
        recorder.failure();
        recorder.failure();
        assert_eq!(ratio.check().await.status(), CheckStatus::Outage);
        tokio::time::sleep(Duration::from_secs(5)).await;
        recorder.success();
        assert_eq!(ratio.counts(), (2, 3));
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(ratio.counts(), (0, 1));
        assert_eq!(ratio.check().await.status(), CheckStatus::Ok);
    }

    #[tokio::test(start_paused = true)]
    async fn too_few_samples_is_ok() {
        let ratio = FailureRatio::new(Duration::from_secs(10), threshold()).min_samples(5);
        ratio.recorder().failure();
        let outcome = ratio.check().await;
        assert_eq!(outcome.status(), CheckStatus::Ok);
        assert!(outcome.message().contains("too few"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_feeds_the_window() {
        let ratio = FailureRatio::new(Duration::from_secs(60), threshold())
            .probe(check::tiered(|| async { CheckStatus::Major }));
        let outcome = ratio.check().await;
        assert_eq!(outcome.status(), CheckStatus::Outage);
        assert_eq!(outcome.value(), Some(1.0));
        assert_eq!(ratio.counts(), (1, 1));
    }
}
