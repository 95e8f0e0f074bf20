//! Running one check under its timeout, isolated from panics.

use std::any::Any;
use std::fmt;
use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use crate::check::CheckOutcome;
use crate::{CheckStatus, Clock, Dependency};

/// The message of a check cancelled by its timeout.
pub const TIMED_OUT: &str = "Timed out prior to completion";

/// How a check ended, as counted in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It returned OK.
    Ok,
    /// It returned MINOR.
    Minor,
    /// It returned MAJOR.
    Major,
    /// It returned OUTAGE (or failed).
    Outage,
    /// It ran past its timeout and was cancelled.
    Timeout,
    /// It panicked.
    Panic,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 6] = [
        Self::Ok,
        Self::Minor,
        Self::Major,
        Self::Outage,
        Self::Timeout,
        Self::Panic,
    ];

    /// The label used in metrics: `ok`, `minor`, `major`, `outage`, `timeout`, `panic`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Minor => "minor",
            Self::Major => "major",
            Self::Outage => "outage",
            Self::Timeout => "timeout",
            Self::Panic => "panic",
        }
    }

    fn of(status: CheckStatus) -> Self {
        match status {
            CheckStatus::Ok => Self::Ok,
            CheckStatus::Minor => Self::Minor,
            CheckStatus::Major => Self::Major,
            CheckStatus::Outage => Self::Outage,
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One executed check.
#[derive(Debug)]
pub(crate) struct Executed {
    pub(crate) outcome: CheckOutcome,
    pub(crate) kind: Outcome,
    pub(crate) duration: Duration,
    pub(crate) finished: Instant,
}

/// Runs the check of `dep` in a task of its own, so that a check blocking its thread cannot
/// stop its own timeout from firing, and a panic stays in that task.
pub(crate) async fn execute(clock: &Clock, dep: &Dependency) -> Executed {
    let info = &dep.info;
    let span = tracing::info_span!(
        "status.check",
        dependency = %info.id,
        urgency = %info.urgency,
        status = tracing::field::Empty,
    );
    let started = clock.now();
    let check = dep.check.clone();
    let mut task = tokio::spawn(async move { check.check_boxed().await }.instrument(span.clone()));
    let (outcome, kind) = match tokio::time::timeout(info.timeout, &mut task).await {
        Ok(Ok(outcome)) => {
            let kind = Outcome::of(outcome.status());
            (outcome, kind)
        }
        Ok(Err(e)) if e.is_panic() => {
            let message = format!("Check panicked: {}", panic_message(&*e.into_panic()));
            (
                CheckOutcome::new(CheckStatus::Outage, message),
                Outcome::Panic,
            )
        }
        Ok(Err(_)) => (
            CheckOutcome::new(CheckStatus::Outage, "Check was cancelled"),
            Outcome::Outage,
        ),
        Err(_) => {
            task.abort();
            (
                CheckOutcome::new(CheckStatus::Outage, TIMED_OUT),
                Outcome::Timeout,
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
