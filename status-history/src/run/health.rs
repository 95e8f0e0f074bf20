//! What the `history` dependency says, from what the driver knows: pure, told the time.

use std::sync::atomic::Ordering;
use std::time::Duration;

use status_core::check::CheckOutcome;
use status_core::CheckStatus;
use tokio::time::Instant;

/// How long a failing store may fail before `history` says MAJOR.
const FAILING_MAJOR_AFTER: Duration = Duration::from_secs(30);
/// How long dropped events keep `history` MINOR.
const DROPS_SAID_FOR: Duration = Duration::from_secs(60);

/// What the `history` dependency says: the store's writes failing (MINOR, MAJOR after
/// [`FAILING_MAJOR_AFTER`]), its note, recent drops, or OK.
pub(super) fn health(
    stats: &super::Stats,
    failing: Option<&(Instant, String)>,
    note: Option<String>,
    dropped_at: Option<Instant>,
) -> CheckOutcome {
    let backlog = stats.backlog.load(Ordering::Relaxed);
    if let Some((since, e)) = failing {
        let level = if since.elapsed() >= FAILING_MAJOR_AFTER {
            CheckStatus::Major
        } else {
            CheckStatus::Minor
        };
        return CheckOutcome::new(
            level,
            format!(
                "writes failing for {} s: {e}; {backlog} rows held back",
                since.elapsed().as_secs()
            ),
        );
    }
    if let Some(note) = note {
        return CheckOutcome::new(CheckStatus::Minor, note);
    }
    if dropped_at.is_some_and(|at| at.elapsed() < DROPS_SAID_FOR) {
        return CheckOutcome::new(
            CheckStatus::Minor,
            format!(
                "{} events or rows dropped since start (a full queue)",
                stats.dropped.load(Ordering::Relaxed)
            ),
        );
    }
    CheckOutcome::new(
        CheckStatus::Ok,
        format!("{} rows written", stats.written.load(Ordering::Relaxed)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Stats;

    #[tokio::test(start_paused = true)]
    async fn failing_writes_are_minor_then_major_and_drops_minor_for_a_minute() {
        let stats = Stats::default();
        let since = Instant::now();
        let failing = (since, "database or disk is full".to_owned());
        assert_eq!(
            health(&stats, Some(&failing), None, None).status(),
            CheckStatus::Minor
        );
        tokio::time::advance(FAILING_MAJOR_AFTER).await;
        let major = health(&stats, Some(&failing), None, None);
        assert_eq!(major.status(), CheckStatus::Major);
        assert!(major.message().contains("full"), "{}", major.message());
        let dropped = Instant::now();
        assert_eq!(
            health(&stats, None, None, Some(dropped)).status(),
            CheckStatus::Minor
        );
        tokio::time::advance(DROPS_SAID_FOR).await;
        assert_eq!(
            health(&stats, None, None, Some(dropped)).status(),
            CheckStatus::Ok
        );
        assert_eq!(
            health(&stats, None, Some("moved aside".into()), None).status(),
            CheckStatus::Minor
        );
    }
}
