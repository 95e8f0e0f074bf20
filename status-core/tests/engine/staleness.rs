//! Stale results are never silently OK.

use std::time::Duration;

use status_core::{CheckStatus, Clock, Event, Feature, Registry, Urgency};

use crate::support::{settle, SkewedClock, Steered};

#[tokio::test(start_paused = true)]
async fn a_stale_result_is_no_better_than_major() {
    let clock = SkewedClock::new();
    let registry = Registry::builder()
        .clock(Clock::from_source(clock.clone()))
        .jitter(0.0)
        .build();
    let ok = Steered::ok();
    let down = Steered::new(crate::support::Mode::Status(CheckStatus::Outage));
    let period = Duration::from_secs(10);
    let timeout = Duration::from_secs(1);
    for (id, check) in [("ok-dep", &ok), ("down-dep", &down)] {
        registry
            .add(
                check
                    .dependency(id)
                    .urgency(Urgency::Weak)
                    .period(period)
                    .timeout(timeout)
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    let feature = registry
        .add_feature(
            Feature::builder("uses-ok-dep")
                .requires("ok-dep", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    let mut events = registry.subscribe();
    registry.refresh_all().await;
    assert!(feature.is_enabled());
    assert!(!registry.result("ok-dep").unwrap().stale());

    // The process stalls for 40 s (more than 3 periods + the timeout) without running any
    // timer: the results turn stale, even before any check runs again.
    clock.skip(Duration::from_secs(40));
    let ok_view = registry.result("ok-dep").unwrap();
    assert!(ok_view.stale());
    assert_eq!(ok_view.status(), CheckStatus::Major);
    assert!(
        ok_view.message().starts_with("Stale: last checked 40s ago"),
        "{}",
        ok_view.message()
    );
    let down_view = registry.report().result("down-dep").cloned().unwrap();
    assert!(down_view.stale());
    assert_eq!(
        down_view.status(),
        CheckStatus::Outage,
        "no better than MAJOR keeps OUTAGE"
    );

    // The watchdog notices within a second: features follow and a change is broadcast.
    tokio::time::sleep(Duration::from_millis(1001)).await;
    settle().await;
    assert!(!feature.is_enabled());
    let mut saw_stale_change = false;
    while let Ok(event) = events.try_recv() {
        if let Event::Changed { current, .. } = event {
            saw_stale_change |= current.id().as_str() == "ok-dep" && current.stale();
        }
    }
    assert!(saw_stale_change);

    // A fresh result clears it.
    let fresh = registry.refresh("ok-dep").await.unwrap();
    assert!(!fresh.stale());
    assert_eq!(fresh.status(), CheckStatus::Ok);
    assert!(feature.is_enabled());
}

#[tokio::test(start_paused = true)]
async fn a_dependency_not_checked_yet_is_major_and_startup_waits_for_it() {
    let registry = crate::support::registry();
    let slow = Steered::new(crate::support::Mode::Slow(
        Duration::from_secs(1),
        CheckStatus::Ok,
    ));
    slow.register(&registry, "slow", |d| d);
    let pending = registry.result("slow").unwrap();
    assert!(!pending.checked());
    assert_eq!(pending.status(), CheckStatus::Major);
    assert_eq!(pending.message(), "Not checked yet");
    assert!(!registry.startup_complete());
    let startup = registry.startup();
    assert!(!startup.complete());
    assert_eq!(startup.pending()[0].as_str(), "slow");
    assert_eq!(startup.pending().len(), 1);

    tokio::time::sleep(Duration::from_millis(1001)).await;
    settle().await;
    assert!(registry.startup_complete());
    assert!(registry.startup().complete() && registry.startup().pending().is_empty());
    assert_eq!(registry.result("slow").unwrap().status(), CheckStatus::Ok);
}
