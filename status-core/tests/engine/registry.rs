//! Adding and removing dependencies at runtime.

use std::time::Duration;

use status_core::{check, CheckStatus, Dependency, Event, Registry, Urgency};

use crate::support::{registry, settle, Steered};

#[tokio::test(start_paused = true)]
async fn duplicates_are_rejected_and_change_nothing() {
    let registry = registry();
    let first = Steered::ok();
    let second = Steered::new(crate::support::Mode::Status(CheckStatus::Outage));
    first.register(&registry, "db", |d| d);
    let err = registry
        .add(second.dependency("db").build().unwrap())
        .unwrap_err();
    assert!(err.is_duplicate());
    assert_eq!(err.to_string(), "dependency \"db\" is already registered");
    let report = registry.refresh_all().await;
    assert_eq!(report.results().len(), 1);
    assert_eq!(report.condition(), CheckStatus::Ok);
    assert_eq!(second.runs(), 0);
}

#[tokio::test(start_paused = true)]
async fn removed_dependencies_stop_being_checked_and_reported() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d.period(Duration::from_secs(1)));
    let mut events = registry.subscribe();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(check.runs(), 3);
    registry.remove("db").unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(check.runs(), 3);
    assert!(registry.report().results().is_empty());
    assert!(registry.result("db").is_none());
    assert!(registry.refresh("db").await.unwrap_err().is_not_found());
    assert!(registry.remove("db").unwrap_err().is_not_found());
    let mut removed = false;
    while let Ok(event) = events.try_recv() {
        removed |= matches!(event, Event::Removed(id) if id.as_str() == "db");
    }
    assert!(removed);

    // The id can be registered again.
    check.register(&registry, "db", |d| d);
    settle().await;
    assert_eq!(check.runs(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_system_status_folds_urgencies() {
    let registry = registry();
    let cases = [
        ("required", Urgency::Required, CheckStatus::Minor),
        ("strong", Urgency::Strong, CheckStatus::Outage),
        ("weak", Urgency::Weak, CheckStatus::Outage),
        ("none", Urgency::None, CheckStatus::Outage),
    ];
    for (id, urgency, status) in cases {
        let check = Steered::new(crate::support::Mode::Status(status));
        registry
            .add(check.dependency(id).urgency(urgency).build().unwrap())
            .unwrap();
    }
    let report = registry.refresh_all().await;
    assert_eq!(report.condition(), CheckStatus::Major);
    let culprits: Vec<_> = report.culprits().map(|r| r.id().as_str()).collect();
    assert_eq!(culprits, ["strong"]);
}

#[test]
fn outside_a_runtime_adding_is_an_error() {
    let registry = Registry::new();
    let dep = Dependency::builder("db", check::tiered(|| async { CheckStatus::Ok }))
        .build()
        .unwrap();
    assert!(registry.add(dep).unwrap_err().is_no_runtime());
    assert!(!registry.contains("db"));
}

#[tokio::test(start_paused = true)]
async fn dropping_the_registry_stops_its_checks() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d.period(Duration::from_secs(1)));
    settle().await;
    assert_eq!(check.runs(), 1);
    drop(registry);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(check.runs(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_cached_report_is_reused_until_something_changes() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d);
    registry.refresh_all().await;
    let a = registry.report();
    let b = registry.report();
    assert!(std::sync::Arc::ptr_eq(&a, &b), "no change, same report");
    check.set_status(CheckStatus::Outage);
    registry.refresh("db").await.unwrap();
    let c = registry.report();
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
    assert_eq!(c.result("db").unwrap().status(), CheckStatus::Minor);
}
