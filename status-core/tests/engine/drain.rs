//! Draining on purpose, for a while or for good.

use std::time::Duration;

use status_core::Event;

use crate::support::{registry, settle, Steered};

#[tokio::test(start_paused = true)]
async fn a_drain_ends_on_time_and_is_announced() {
    let registry = registry();
    registry
        .add(Steered::ok().dependency("db").build().unwrap())
        .unwrap();
    let mut events = registry.subscribe();
    let drain = registry
        .drain("deploying v2", Some(Duration::from_secs(60)), Some("bob"))
        .unwrap();
    assert_eq!(drain.reason, "deploying v2");
    assert_eq!(drain.until, Some(drain.since + Duration::from_secs(60)));
    assert!(registry.drain_state().is_some());

    tokio::time::sleep(Duration::from_secs(59)).await;
    assert!(registry.drain_state().is_some());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    settle().await;
    assert!(registry.drain_state().is_none());

    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::Drain(d) = event {
            seen.push(d.is_some());
        }
    }
    assert_eq!(seen, [true, false]);
}

#[tokio::test(start_paused = true)]
async fn undrain_and_bad_requests() {
    let registry = registry();
    assert!(registry.drain("  ", None, None).unwrap_err().is_invalid());
    assert!(registry
        .drain("x", Some(Duration::from_secs(604_801)), None)
        .unwrap_err()
        .is_invalid());
    assert!(
        registry.drain_state().is_none(),
        "a rejected drain changes nothing"
    );

    registry.drain("shutting down", None, None).unwrap();
    tokio::time::sleep(Duration::from_secs(86_400)).await;
    assert!(registry.drain_state().is_some(), "no TTL: until undrained");
    assert!(registry.undrain());
    assert!(registry.drain_state().is_none());
    assert!(!registry.undrain());
}
