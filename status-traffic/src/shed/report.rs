//! The shedding layer as a passive dependency (MINOR while it refuses requests), and the
//! history of its state that the reporting task keeps.

use std::time::Duration;

use status_core::check::CheckOutcome;
use status_core::{CheckStatus, Reporter};

use super::{ShedLayer, ShedState};

/// Samples a layer keeps: ten minutes at one a second.
pub(super) const HISTORY: usize = 600;

/// The layer's state at the end of one reporting period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShedSample {
    /// When, since the layer was made.
    pub at: Duration,
    /// The limit then.
    pub limit: usize,
    /// Requests being processed then.
    pub in_flight: usize,
    /// Requests waiting then.
    pub queued: usize,
    /// Requests refused during the period, for any reason.
    pub refused: u64,
    /// The period's length.
    pub period: Duration,
}

impl ShedSample {
    fn between(at: Duration, period: Duration, before: &ShedState, now: &ShedState) -> Self {
        let total = |s: &ShedState| s.queue_full + s.queue_timeout + s.elapsed;
        Self {
            at,
            limit: now.limit,
            in_flight: now.in_flight,
            queued: now.queued,
            refused: total(now).saturating_sub(total(before)),
            period,
        }
    }
}

/// What the layer says of itself between two snapshots: MINOR with the count and reasons if
/// it refused any request in between, OK with its limit and load otherwise.
#[must_use]
pub fn verdict(before: &ShedState, now: &ShedState) -> (CheckStatus, String) {
    let full = now.queue_full.saturating_sub(before.queue_full);
    let waited = now.queue_timeout.saturating_sub(before.queue_timeout);
    let late = now.elapsed.saturating_sub(before.elapsed);
    let load = format!(
        "limit {}, {} in flight, {} queued",
        now.limit, now.in_flight, now.queued
    );
    if full + waited + late == 0 {
        return (CheckStatus::Ok, load);
    }
    (
        CheckStatus::Minor,
        format!(
            "shedding: {} refused ({full} queue full, {waited} waited too long, {late} past the \
             deadline); {load}",
            full + waited + late
        ),
    )
}

impl<R: 'static> ShedLayer<R> {
    /// Reports the layer's [`verdict`] to `reporter` every `period`, from a task on the
    /// current Tokio runtime, until the registry is gone; each period also ends as a
    /// [`ShedSample`] in the layer's [`history`](ShedLayer::history).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn report_to(&self, reporter: Reporter, period: Duration) -> tokio::task::JoinHandle<()> {
        let layer = self.clone();
        let mut before = None;
        crate::report::every(reporter, period, move || {
            let now = layer.state();
            let outcome = before.as_ref().map(|before| {
                layer.record(ShedSample::between(layer.elapsed(), period, before, &now));
                let (status, message) = verdict(before, &now);
                CheckOutcome::new(status, message)
            });
            before = Some(now);
            outcome
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(queue_full: u64, elapsed: u64) -> ShedState {
        ShedState {
            limit: 12,
            in_flight: 12,
            queued: 3,
            queue_full,
            queue_timeout: 0,
            elapsed,
        }
    }

    #[test]
    fn minor_only_while_refusing() {
        let (status, message) = verdict(&state(5, 1), &state(5, 1));
        assert_eq!(status, CheckStatus::Ok);
        assert_eq!(message, "limit 12, 12 in flight, 3 queued");
        let (status, message) = verdict(&state(5, 1), &state(9, 2));
        assert_eq!(status, CheckStatus::Minor);
        assert!(
            message.starts_with("shedding: 5 refused (4 queue full"),
            "{message}"
        );
    }
}
