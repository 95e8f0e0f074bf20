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

/// Reads never write: a hold that ran out is left out of every read at once (readiness,
/// holds, the generation renderers key on), but only the watchdog drops it and announces the
/// change: probes, gRPC checks, scrapes and fleet beats emit nothing.
#[tokio::test(start_paused = true)]
async fn reads_never_announce_an_expiry_only_the_watchdog_does() {
    let registry = status_core::Registry::builder()
        .jitter(0.0)
        .watchdog_interval(Duration::from_secs(3600))
        .build();
    registry
        .add(Steered::ok().dependency("db").build().unwrap())
        .unwrap();
    registry.refresh_all().await;
    let mut events = registry.subscribe();
    registry
        .drain("deploy", Some(Duration::from_secs(60)), None)
        .unwrap();
    let generation = registry.rotation_generation();
    assert!(!registry.readiness().ready());
    tokio::time::sleep(Duration::from_secs(61)).await;
    for _ in 0..100 {
        assert!(registry.holds().is_empty());
        assert!(registry.cull_hold().is_none());
        assert!(registry.readiness().ready());
        assert!(registry.drain_state().is_none());
    }
    assert_ne!(
        registry.rotation_generation(),
        generation,
        "renderers see the expiry at once"
    );
    let drains = |events: &mut tokio::sync::broadcast::Receiver<Event>| {
        let mut n = 0;
        while let Ok(event) = events.try_recv() {
            n += usize::from(matches!(event, Event::Drain(_)));
        }
        n
    };
    assert_eq!(
        drains(&mut events),
        1,
        "the drain itself, and no read announced the end"
    );
    tokio::time::sleep(Duration::from_secs(3600)).await;
    settle().await;
    assert_eq!(drains(&mut events), 1, "the watchdog announced it, once");
}
