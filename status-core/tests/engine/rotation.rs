//! Rotation holds: each source holds the instance on its own.

use std::time::Duration;

use status_core::HoldSource;

use crate::support::registry;

#[tokio::test(start_paused = true)]
async fn a_cull_hold_and_an_operator_hold_coexist() {
    let registry = registry();
    registry
        .hold(HoldSource::Cull, "412 errors in 60 s", None, Some("culler"))
        .unwrap();
    registry
        .drain("deploy", Some(Duration::from_secs(300)), Some("bob"))
        .unwrap();
    let holds = registry.holds();
    let sources: Vec<_> = holds.iter().map(|h| h.source).collect();
    assert_eq!(sources, [HoldSource::Cull, HoldSource::Operator]);
    assert!(!registry.readiness().ready());

    // The operator's undrain ends the operator's hold only.
    assert!(registry.undrain());
    let drain = registry.drain_state().expect("the cull still holds");
    assert_eq!(drain.reason, "412 errors in 60 s");
    assert_eq!(drain.holds.len(), 1);
    assert!(!registry.readiness().ready());
    assert!(registry.readiness().reasons()[0].contains("412 errors"));

    assert!(registry.release(HoldSource::Cull));
    assert!(registry.drain_state().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_short_operator_drain_does_not_shorten_a_shutdown() {
    let registry = registry();
    registry
        .hold(HoldSource::Shutdown, "shutting down", None, None)
        .unwrap();
    registry
        .drain("quick check", Some(Duration::from_secs(1)), None)
        .unwrap();
    tokio::time::advance(Duration::from_secs(5)).await;
    let holds = registry.holds();
    assert_eq!(holds.len(), 1, "the operator's 1 s drain ran out");
    assert_eq!(holds[0].source, HoldSource::Shutdown);
    assert!(
        !registry.undrain(),
        "nothing of the operator's is left to clear"
    );
    assert!(registry.drain_state().is_some());
    assert!(!registry.readiness().ready());
}

#[tokio::test(start_paused = true)]
async fn a_rejected_hold_changes_nothing() {
    let registry = registry();
    let generation = registry.rotation_generation();
    assert!(registry
        .hold(HoldSource::Cull, " ", None, None)
        .unwrap_err()
        .is_invalid());
    assert!(registry
        .hold(HoldSource::Operator, "x", Some(Duration::ZERO), None)
        .unwrap_err()
        .is_invalid());
    assert!(registry.holds().is_empty());
    assert_eq!(registry.rotation_generation(), generation);
}
