//! Grading a measured latency, shared by the component checks.

use std::time::Duration;

use status_core::check::{CheckOutcome, Threshold, Unit};
use status_core::CheckStatus;

/// An outcome for a successful call that took `latency`: OK, or graded by `threshold` (in
/// milliseconds) when one is set. The latency in milliseconds is the outcome's value.
pub(crate) fn graded(latency: Duration, threshold: Option<&Threshold>, what: &str) -> CheckOutcome {
    let ms = latency.as_secs_f64() * 1000.0;
    let status = threshold.map_or(CheckStatus::Ok, |t| t.status_of(ms));
    CheckOutcome::new(status, format!("{what} in {ms:.1} ms")).with_value_in(ms, Unit::Milliseconds)
}
