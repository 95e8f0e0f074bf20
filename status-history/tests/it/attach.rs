//! The driver on a real registry, under Tokio's paused time: what it records, what a
//! restart puts back, and how the `history` dependency says a failing store.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use status_core::{
    check, CheckStatus, Clock, Dependency, Feature, FeatureOverride, MuteWindow, Registry, Urgency,
};
use status_history::{History, Series, HISTORY_ID};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "status-history-attach-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("history.db")
}

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 10, 0, 0).unwrap()
}

/// A registry whose `db` says what `level` holds, checked every second.
fn make(at: DateTime<Utc>, level: &Arc<AtomicU8>) -> Registry {
    let registry = Registry::builder()
        .clock(Clock::tokio_starting_at(at))
        .jitter(0.0)
        .build();
    let level = level.clone();
    registry
        .add(
            Dependency::builder(
                "db",
                check::tiered(move || {
                    let level = level.clone();
                    async move {
                        let status =
                            CheckStatus::from_severity(level.load(Ordering::SeqCst)).unwrap();
                        (status, format!("db is {status}"))
                    }
                }),
            )
            .urgency(Urgency::Required)
            .period(Duration::from_secs(1))
            .failures_before_outage(1)
            .build()
            .unwrap(),
        )
        .unwrap();
    registry
        .add_feature(
            Feature::builder("checkout")
                .requires("db", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

async fn run_for(d: Duration) {
    let step = Duration::from_millis(250);
    let mut left = d;
    while !left.is_zero() {
        tokio::time::sleep(step.min(left)).await;
        left = left.saturating_sub(step);
    }
}

#[tokio::test(start_paused = true)]
async fn time_in_each_level_and_transitions_are_recorded() {
    let path = temp("levels");
    let level = Arc::new(AtomicU8::new(0));
    let registry = make(start(), &level);
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    run_for(Duration::from_secs(60)).await;
    level.store(3, Ordering::SeqCst);
    run_for(Duration::from_secs(30)).await;
    level.store(0, Ordering::SeqCst);
    run_for(Duration::from_secs(30)).await;
    history.flush().await;

    let db = Series::Dependency("db".into());
    let now = registry.clock().wall();
    let report = history
        .uptime(db.clone(), now - chrono::Duration::hours(1), now)
        .await
        .unwrap();
    let spent = report.spent;
    // About 90 s up and 30 s down, to a check's period.
    assert!((29_000..=31_500).contains(&spent.outage), "{spent:?}");
    assert!((88_000..=91_500).contains(&spent.ok), "{spent:?}");
    assert!(report.checks >= 115, "{}", report.checks);
    assert!(
        report.failures >= 29 && report.failures <= 31,
        "{}",
        report.failures
    );
    let uptime = report.uptime.unwrap();
    assert!((0.73..0.77).contains(&uptime), "{uptime}");
    // The system follows a Required dependency.
    let system = history
        .uptime(Series::System, now - chrono::Duration::hours(1), now)
        .await
        .unwrap();
    assert!(
        (29_000..=31_500).contains(&system.spent.outage),
        "{:?}",
        system.spent
    );

    let transitions = history.transitions(db, 10).await.unwrap();
    let levels: Vec<_> = transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        levels,
        [
            (None, CheckStatus::Ok),
            (Some(CheckStatus::Ok), CheckStatus::Outage),
            (Some(CheckStatus::Outage), CheckStatus::Ok)
        ]
    );
    assert_eq!(transitions[1].message, "db is OUTAGE");
    let tiles = history.days(Series::System, 90).await.unwrap();
    assert_eq!(tiles.len(), 90);
    assert_eq!(tiles.last().unwrap().worst, Some(CheckStatus::Outage));
    assert!(tiles[..89].iter().all(|t| t.worst.is_none()));
    assert_eq!(
        registry.result(HISTORY_ID).unwrap().status(),
        CheckStatus::Ok
    );
    assert_eq!(history.stats().dropped, 0);
}

#[tokio::test(start_paused = true)]
async fn a_restart_puts_back_mutes_and_overrides_in_force_and_not_those_ended() {
    let path = temp("restore");
    let level = Arc::new(AtomicU8::new(0));
    {
        let registry = make(start(), &level);
        let history = History::sqlite(&path).open();
        history.attach(&registry);
        assert_eq!(history.restored().await.mutes, 0);
        registry
            .mute(
                "db",
                MuteWindow::For(Duration::from_secs(3600)),
                "migration",
                Some("alice"),
            )
            .unwrap();
        registry
            .override_feature(
                "checkout",
                &FeatureOverride::new(false, Duration::from_secs(120), "vendor down")
                    .unwrap()
                    .actor("bob"),
            )
            .unwrap();
        run_for(Duration::from_secs(2)).await;
        history.flush().await;
    }
    // Ten minutes later: the mute (an hour) is still in force, the override (two minutes)
    // has ended.
    let registry = make(start() + chrono::Duration::minutes(10), &level);
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    let restored = history.restored().await;
    assert_eq!((restored.mutes, restored.overrides), (1, 0), "{restored:?}");
    let mute = registry.muted("db").expect("muted again");
    assert_eq!(
        (mute.reason.as_str(), mute.actor.as_deref()),
        ("migration", Some("alice"))
    );
    assert_eq!(mute.until, start() + chrono::Duration::hours(1));
    // With its own times: set, and in force, from when alice set it, not from the restart.
    assert_eq!((mute.set_at, mute.start), (start(), start()));
    assert!(registry
        .feature("checkout")
        .unwrap()
        .state()
        .override_
        .is_none());

    // An override in force comes back with its remaining time.
    let set_at = registry.clock().wall();
    registry
        .override_feature(
            "checkout",
            &FeatureOverride::new(true, Duration::from_secs(600), "test").unwrap(),
        )
        .unwrap();
    run_for(Duration::from_secs(2)).await;
    history.flush().await;
    drop(registry);
    let registry = make(start() + chrono::Duration::minutes(12), &level);
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    let flips_before = registry.feature_flips("checkout").unwrap().len();
    let restored = history.restored().await;
    assert_eq!(restored.overrides, 1, "{restored:?}");
    let o = registry
        .feature("checkout")
        .unwrap()
        .state()
        .override_
        .unwrap();
    assert!(o.enabled);
    assert_eq!(o.set_at, set_at, "its own time");
    let flips = registry.feature_flips("checkout").unwrap();
    assert!(
        flips[flips_before..]
            .iter()
            .all(|f| f.cause != status_core::FlipCause::Override),
        "a restored override is no new flip: {flips:?}"
    );
    let left = o.expires_at - (start() + chrono::Duration::minutes(12));
    // Set at 10 min (and the few seconds the first run waited for the file) for ten
    // minutes, read at 12 min: eight left.
    assert!((470..=490).contains(&left.num_seconds()), "{left}");
}

#[tokio::test(start_paused = true)]
async fn holds_from_code_are_audited() {
    let path = temp("holds");
    let level = Arc::new(AtomicU8::new(0));
    let registry = make(start(), &level);
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    registry
        .hold(status_core::HoldSource::Shutdown, "SIGTERM", None, None)
        .unwrap();
    run_for(Duration::from_secs(2)).await;
    registry.release(status_core::HoldSource::Shutdown);
    run_for(Duration::from_secs(2)).await;
    history.flush().await;
    let audit = history.audit(None, 10).await.unwrap();
    let said: Vec<_> = audit
        .iter()
        .map(|(_, a)| (a.action.as_str(), a.target.as_str(), a.outcome.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("hold", "shutdown", "released"),
            ("hold", "shutdown", "taken")
        ]
    );
    assert_eq!(audit[1].1.reason.as_deref(), Some("SIGTERM"));
}
