//! Features follow their dependencies; overrides win until they expire.

use std::time::Duration;

use status_core::{CheckStatus, Event, Feature, FeatureOverride, FlipCause, Urgency};

use crate::support::{registry, settle, Steered};

fn force(enabled: bool, seconds: u64) -> FeatureOverride {
    FeatureOverride::new(
        enabled,
        Duration::from_secs(seconds),
        "vendor says it is fine",
    )
    .unwrap()
    .actor("alice")
}

#[tokio::test(start_paused = true)]
async fn a_feature_follows_its_dependency_and_its_override_expires_on_time() {
    let registry = registry();
    let payments = Steered::ok();
    payments.register(&registry, "payments-api", |d| {
        d.urgency(Urgency::Strong).failures_before_outage(1)
    });
    let checkout = registry
        .add_feature(
            Feature::builder("checkout")
                .requires("payments-api", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    assert!(checkout.is_enabled());

    payments.set_status(CheckStatus::Outage);
    registry.refresh("payments-api").await.unwrap();
    assert!(!checkout.is_enabled());
    let state = checkout.state();
    assert!(!state.automatic);
    assert_eq!(
        state.reason,
        "payments-api is OUTAGE, needs MINOR or better"
    );

    let forced = registry
        .override_feature("checkout", &force(true, 60))
        .unwrap();
    assert!(forced.enabled);
    assert!(checkout.is_enabled());
    assert_eq!(
        forced.override_.as_ref().unwrap().actor.as_deref(),
        Some("alice")
    );

    tokio::time::sleep(Duration::from_secs(59)).await;
    settle().await;
    assert!(
        checkout.is_enabled(),
        "the override holds until its TTL ends"
    );
    tokio::time::sleep(Duration::from_millis(1001)).await;
    settle().await;
    assert!(!checkout.is_enabled(), "the override expired on time");
    assert!(checkout.state().override_.is_none());

    let causes: Vec<_> = registry
        .feature_flips("checkout")
        .unwrap()
        .into_iter()
        .map(|f| (f.enabled, f.cause))
        .collect();
    assert_eq!(
        causes,
        [
            // Off while not checked yet (unknown is not healthy), on with the first check.
            (true, FlipCause::Automatic),
            (false, FlipCause::Automatic),
            (true, FlipCause::Override),
            (false, FlipCause::OverrideExpired),
        ]
    );

    // And it follows the dependency back.
    payments.set_status(CheckStatus::Ok);
    registry.refresh("payments-api").await.unwrap();
    assert!(checkout.is_enabled());
}

#[tokio::test(start_paused = true)]
async fn overrides_replace_and_clear() {
    let registry = registry();
    let dep = Steered::ok();
    dep.register(&registry, "search", |d| d);
    let feature = registry
        .add_feature(
            Feature::builder("search-box")
                .requires("search", CheckStatus::Major)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    let mut events = registry.subscribe();

    registry
        .override_feature("search-box", &force(false, 10))
        .unwrap();
    assert!(!feature.is_enabled());
    // A longer override replaces the first; the first one's expiry must not end it.
    registry
        .override_feature("search-box", &force(false, 100))
        .unwrap();
    tokio::time::sleep(Duration::from_secs(11)).await;
    settle().await;
    assert!(!feature.is_enabled());

    let cleared = registry.clear_override("search-box").unwrap();
    assert!(cleared.enabled && cleared.override_.is_none());
    assert!(feature.is_enabled());

    let mut flips = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let Event::Feature {
            flip: Some(flip), ..
        } = event
        {
            flips.push(flip.cause);
        }
    }
    assert_eq!(flips, [FlipCause::Override, FlipCause::OverrideCleared]);
}

#[tokio::test(start_paused = true)]
async fn a_system_requirement_follows_the_system_status() {
    let registry = registry();
    let db = Steered::ok();
    db.register(&registry, "db", |d| d.failures_before_outage(1));
    let feature = registry
        .add_feature(
            Feature::builder("writes")
                .requires_system(CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    assert!(feature.is_enabled());
    db.set_status(CheckStatus::Major);
    registry.refresh("db").await.unwrap();
    assert!(!feature.is_enabled());
    assert!(feature.state().reason.contains("the system is MAJOR"));
}

#[tokio::test(start_paused = true)]
async fn bad_feature_registrations_and_calls_change_nothing() {
    let registry = registry();
    let dep = Steered::ok();
    dep.register(&registry, "db", |d| d);
    let unknown_dep = Feature::builder("f")
        .requires("nope", CheckStatus::Ok)
        .build()
        .unwrap();
    assert!(registry
        .add_feature(unknown_dep)
        .unwrap_err()
        .is_not_found());
    assert!(registry.feature("f").is_none());

    let f = Feature::builder("f")
        .requires("db", CheckStatus::Ok)
        .build()
        .unwrap();
    registry.add_feature(f.clone()).unwrap();
    assert!(registry.add_feature(f).unwrap_err().is_duplicate());

    assert!(registry
        .override_feature("nope", &force(true, 5))
        .unwrap_err()
        .is_not_found());
    assert!(registry.clear_override("nope").unwrap_err().is_not_found());
    for (ttl, reason) in [(0, "r"), (604_801, "r"), (10, "  ")] {
        let err = FeatureOverride::new(true, Duration::from_secs(ttl), reason).unwrap_err();
        assert!(err.is_invalid(), "{ttl} {reason:?}");
    }
    assert!(registry.feature_flips("f").unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn removing_a_required_dependency_turns_the_feature_off() {
    let registry = registry();
    let dep = Steered::ok();
    dep.register(&registry, "db", |d| d);
    let feature = registry
        .add_feature(
            Feature::builder("f")
                .requires("db", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    assert!(feature.is_enabled());
    registry.remove("db").unwrap();
    assert!(!feature.is_enabled());
    assert_eq!(feature.state().reason, "db is not registered");
}
