//! The one loop every mechanism reports through: a verdict every period into its passive
//! dependency, until the registry is gone.

use std::time::Duration;

use status_core::check::CheckOutcome;
use status_core::Reporter;

/// Records `verdict()` into `reporter` every `period` (the first at once), from a task on the
/// current Tokio runtime, until the registry is gone; a `None` verdict records nothing.
///
/// # Panics
///
/// Outside a Tokio runtime.
pub(crate) fn every(
    reporter: Reporter,
    period: Duration,
    mut verdict: impl FnMut() -> Option<CheckOutcome> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Some(outcome) = verdict() {
                if reporter.record(outcome).is_none() {
                    return;
                }
            }
        }
    })
}
