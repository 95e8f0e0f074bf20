//! Pushed results go through hysteresis, history, features and events exactly like polled
//! ones; an idle passive dependency keeps its status.

use std::time::Duration;

use status_core::CheckStatus::{self, Major, Minor, Ok, Outage};
use status_core::{Dependency, Feature, Urgency};

use crate::support::{registry, Steered};

#[tokio::test(start_paused = true)]
async fn pushed_results_behave_exactly_like_polled_ones() {
    let registry = registry();
    let polled = Steered::ok();
    polled.register(&registry, "polled", |d| d.urgency(Urgency::Weak));
    let pushed = registry
        .add_passive(
            Dependency::passive("pushed")
                .urgency(Urgency::Weak)
                .period(Duration::from_secs(3600))
                .build_info()
                .unwrap(),
        )
        .unwrap();
    let polled_feature = registry
        .add_feature(
            Feature::builder("a")
                .requires("polled", Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    let pushed_feature = registry
        .add_feature(
            Feature::builder("b")
                .requires("pushed", Minor)
                .build()
                .unwrap(),
        )
        .unwrap();

    let raws = [Ok, Outage, Outage, Outage, Major, Ok, Outage];
    for raw in raws {
        polled.set_status(raw);
        let a = registry.refresh("polled").await.unwrap();
        let b = pushed.record((raw, "said")).unwrap();
        assert_eq!(
            (a.status(), a.consecutive_failures(), a.flapping()),
            (b.status(), b.consecutive_failures(), b.flapping()),
            "after {raw}"
        );
        assert_eq!(
            polled_feature.is_enabled(),
            pushed_feature.is_enabled(),
            "after {raw}"
        );
    }
    let a = registry.history("polled").unwrap();
    let b = registry.history("pushed").unwrap();
    let statuses = |h: &status_core::HistorySnapshot| -> Vec<CheckStatus> {
        h.transitions.iter().map(|t| t.to).collect()
    };
    assert_eq!(statuses(&a), statuses(&b));
    assert_eq!(statuses(&b), [Ok, Minor, Outage, Major, Ok, Minor]);
}

#[tokio::test(start_paused = true)]
async fn a_passive_dependency_does_not_hold_up_startup_and_idles_without_failing() {
    let registry = registry();
    let errors = registry
        .add_passive(
            Dependency::passive("errors")
                .urgency(Urgency::Required)
                .period(Duration::from_secs(10))
                .failures_before_outage(1)
                .build_info()
                .unwrap(),
        )
        .unwrap();
    let mut events = registry.subscribe();
    assert!(
        registry.startup_complete() && registry.startup().complete(),
        "no traffic yet is not a pending check"
    );
    let first = registry.result("errors").unwrap();
    assert_eq!(
        (first.status(), first.idle(), first.passive()),
        (Ok, true, true)
    );

    errors.record((Major, "30% errors"));
    assert_eq!(registry.condition(), Major);
    assert!(matches!(
        events.recv().await.unwrap(),
        status_core::Event::Checked { .. }
    ));
    tokio::time::advance(Duration::from_secs(60)).await;
    crate::support::settle().await;
    let idle = registry.result("errors").unwrap();
    assert!(idle.idle() && !idle.stale(), "{idle:?}");
    assert_eq!(
        idle.status(),
        Major,
        "an idle dependency keeps its last status"
    );
    assert_eq!(registry.report().condition(), Major);

    // Refreshing a passive dependency runs nothing; removing it stops its reporter.
    assert_eq!(registry.refresh("errors").await.unwrap().status(), Major);
    registry.remove("errors").unwrap();
    assert!(errors.record(Ok).is_none());
    assert_eq!(registry.condition(), Ok);
}
