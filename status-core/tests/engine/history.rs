//! History and uptime, over an hour of paused time.

use std::time::Duration;

use status_core::CheckStatus;

use crate::support::{registry, Steered};

#[tokio::test(start_paused = true)]
async fn uptime_and_transitions_over_an_hour() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| {
        d.period(Duration::from_secs(60))
            .timeout(Duration::from_secs(1))
            .failures_before_outage(1)
    });
    // Checks at minute 0..=29 are OK, at 30..=59 OUTAGE.
    tokio::time::sleep(Duration::from_secs(30 * 60 - 1)).await;
    check.set_status(CheckStatus::Outage);
    tokio::time::sleep(Duration::from_secs(30 * 60)).await;
    assert_eq!(check.runs(), 60);

    let history = registry.history("db").unwrap();
    assert_eq!(history.uptime.last_hour, Some(0.5));
    assert_eq!(history.uptime.last_day, Some(0.5));
    assert_eq!(history.last_hour.len(), 60);
    assert_eq!(history.last_hour[29].worst, CheckStatus::Ok);
    assert_eq!(history.last_hour[30].worst, CheckStatus::Outage);
    let changes: Vec<_> = history.transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        changes,
        [
            (None, CheckStatus::Ok),
            (Some(CheckStatus::Ok), CheckStatus::Outage)
        ]
    );
    assert_eq!(
        registry.result("db").unwrap().since(),
        crate::support::epoch() + chrono::Duration::minutes(30)
    );
    assert!(registry.history("nope").unwrap_err().is_not_found());
}
