//! A dependency declared with the macro behaves exactly as the same one registered by hand.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, Registry, Urgency};

static CALLS: AtomicUsize = AtomicUsize::new(0);

/// OK, OK, then failing with an error, then OK: the same script for both.
async fn scripted() -> Result<(), std::io::Error> {
    let n = CALLS.fetch_add(1, Ordering::SeqCst) / 2;
    if (2..5).contains(&n) {
        Err(std::io::Error::other("connection refused"))
    } else {
        Ok(())
    }
}

#[status_core::dependency(
    id = "by-macro",
    urgency = "strong",
    kind = "postgres",
    timeout = "2s",
    period = "1h",
    tags = ["db"]
)]
async fn by_macro() -> Result<(), std::io::Error> {
    scripted().await
}

#[tokio::test(start_paused = true)]
async fn macro_and_hand_written_dependencies_report_the_same() {
    let registry = Registry::builder().jitter(0.0).build();
    registry.add(by_macro()).unwrap();
    registry
        .add(
            Dependency::builder("by-hand", check::ping(scripted))
                .urgency(Urgency::Strong)
                .kind("postgres")
                .timeout(Duration::from_secs(2))
                .period(Duration::from_secs(3600))
                .tag("db")
                .build()
                .unwrap(),
        )
        .unwrap();
    let mut seen = Vec::new();
    for _ in 0..7 {
        // Both checks run once per round, so each sees the same step of the script.
        let report = registry.refresh_all().await;
        let a = report.result("by-macro").unwrap();
        let b = report.result("by-hand").unwrap();
        assert_eq!(a.status(), b.status());
        assert_eq!(a.raw_status(), b.raw_status());
        assert_eq!(a.message(), b.message());
        assert_eq!(a.thrown(), b.thrown());
        assert_eq!(a.consecutive_failures(), b.consecutive_failures());
        assert_eq!(a.urgency(), b.urgency());
        assert_eq!(a.kind(), b.kind());
        assert_eq!(a.timeout(), b.timeout());
        assert_eq!(a.period(), b.period());
        assert_eq!(a.tags(), b.tags());
        seen.push(a.status());
    }
    // The script went through the hysteresis, so the comparison covered failures too.
    assert!(seen.contains(&CheckStatus::Minor), "{seen:?}");
    assert!(seen.contains(&CheckStatus::Outage), "{seen:?}");
}
