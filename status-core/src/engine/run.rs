//! Running one check under its timeout, isolated from panics.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::check::CheckOutcome;
use crate::check::DynCheck;
use crate::event::RunOutcome;
use crate::{CheckStatus, Clock, DependencyInfo};

/// The message of a check cancelled by its timeout.
pub const TIMED_OUT: &str = "Timed out prior to completion";

/// One executed check.
#[derive(Debug)]
pub(crate) struct Executed {
    pub(crate) outcome: CheckOutcome,
    pub(crate) kind: RunOutcome,
    pub(crate) duration: Duration,
    pub(crate) finished: Instant,
}

/// Runs the check of `dep` in a task of its own, so that a check blocking its thread cannot
/// stop its own timeout from firing, and a panic stays in that task.
pub(crate) async fn execute(
    clock: &Clock,
    info: &DependencyInfo,
    check: Arc<dyn DynCheck>,
) -> Executed {
    let span = tracing::info_span!(
        "status.check",
        dependency = %info.id,
        urgency = %info.urgency,
        status = tracing::field::Empty,
    );
    let started = clock.now();
    let mut task = tokio::spawn(async move { check.check_boxed().await }.instrument(span.clone()));
    let (outcome, kind) = match tokio::time::timeout(info.timeout, &mut task).await {
        Ok(Ok(outcome)) => {
            let kind = RunOutcome::of(outcome.status());
            (outcome, kind)
        }
        Ok(Err(e)) if e.is_panic() => {
            let message = format!("Check panicked: {}", panic_message(&*e.into_panic()));
            (
                CheckOutcome::new(CheckStatus::Outage, message),
                RunOutcome::Panic,
            )
        }
        Ok(Err(_)) => (
            CheckOutcome::new(CheckStatus::Outage, "Check was cancelled"),
            RunOutcome::Outage,
        ),
        Err(_) => {
            task.abort();
            (
                CheckOutcome::new(CheckStatus::Outage, TIMED_OUT),
                RunOutcome::Timeout,
            )
        }
    };
    let finished = clock.now();
    let duration = finished.saturating_duration_since(started);
    span.record("status", outcome.status().as_str());
    span.in_scope(|| {
        tracing::debug!(
            outcome = %kind,
            duration_ms = duration.as_millis(),
            message = outcome.message(),
            "check finished"
        );
    });
    Executed {
        outcome,
        kind,
        duration,
        finished,
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}
