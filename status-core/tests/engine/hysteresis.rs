//! Hysteresis and flapping, through the registry.

use status_core::CheckStatus::{self, Major, Minor, Ok, Outage};

use crate::support::{registry, Steered};

async fn statuses(
    registry: &status_core::Registry,
    check: &Steered,
    raws: &[CheckStatus],
) -> Vec<CheckStatus> {
    let mut out = Vec::new();
    for &raw in raws {
        check.set_status(raw);
        out.push(registry.refresh("db").await.unwrap().status());
    }
    out
}

#[tokio::test(start_paused = true)]
async fn three_failures_after_a_success_go_minor_minor_then_real() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d);
    assert_eq!(registry.refresh("db").await.unwrap().status(), Ok);

    check.set_status(Outage);
    let first = registry.refresh("db").await.unwrap();
    assert_eq!(first.status(), Minor);
    assert_eq!(first.raw_status(), Outage);
    assert_eq!(first.consecutive_failures(), 1);
    assert!(
        first.message().contains("failure 1 of 3"),
        "{}",
        first.message()
    );
    let second = registry.refresh("db").await.unwrap();
    assert_eq!(second.status(), Minor);
    let third = registry.refresh("db").await.unwrap();
    assert_eq!(third.status(), Outage);
    assert_eq!(third.consecutive_failures(), 3);
    assert_eq!(registry.condition(), Outage);

    // One success recovers by default.
    check.set_status(Ok);
    let recovered = registry.refresh("db").await.unwrap();
    assert_eq!(recovered.status(), Ok);
    assert_eq!(recovered.consecutive_failures(), 0);
}

#[tokio::test(start_paused = true)]
async fn non_consecutive_failures_never_accumulate() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d);
    assert_eq!(registry.refresh("db").await.unwrap().status(), Ok);
    let pattern = [Outage, Major, Ok].repeat(10);
    let out = statuses(&registry, &check, &pattern).await;
    assert!(out.iter().all(|s| *s <= Minor), "{out:?}");
}

#[tokio::test(start_paused = true)]
async fn recovery_can_require_several_successes() {
    let registry = registry();
    let check = Steered::new(crate::support::Mode::Status(Outage));
    check.register(&registry, "db", |d| d.successes_before_recovery(2));
    let out = statuses(&registry, &check, &[Outage, Ok, Ok]).await;
    assert_eq!(out, [Outage, Outage, Ok]);
}

#[tokio::test(start_paused = true)]
async fn a_dependency_that_never_succeeded_reports_at_once() {
    let registry = registry();
    let check = Steered::new(crate::support::Mode::Status(Outage));
    check.register(&registry, "db", |d| d);
    assert_eq!(registry.refresh("db").await.unwrap().status(), Outage);
}

#[tokio::test(start_paused = true)]
async fn a_dependency_that_changes_too_often_is_flapping() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d.failures_before_outage(1));
    let alternating: Vec<_> = (0..10)
        .map(|i| if i % 2 == 0 { Outage } else { Ok })
        .collect();
    statuses(&registry, &check, &alternating).await;
    assert!(registry.result("db").unwrap().flapping());
    assert!(registry.report().result("db").unwrap().flapping());

    statuses(&registry, &check, &[Ok; 20]).await;
    assert!(!registry.result("db").unwrap().flapping());
}
