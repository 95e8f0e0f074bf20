//! Mutes and maintenance windows: still checked and shown, bounded, ending by themselves.

use std::time::Duration;

use status_core::{Event, MuteWindow, MAX_MUTES};

use crate::support::{registry, settle, Steered};

const S: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn a_mute_shows_in_the_report_and_ends_on_time() {
    let registry = registry();
    registry
        .add(Steered::ok().dependency("db").build().unwrap())
        .unwrap();
    registry.refresh_all().await;
    let mut events = registry.subscribe();
    let mute = registry
        .mute("db", MuteWindow::For(60 * S), "upgrade to 16", Some("ops"))
        .unwrap();
    assert!(mute.active);
    assert_eq!(mute.until - mute.start, chrono::Duration::seconds(60));

    let report = registry.report();
    let shown = report.results()[0]
        .mute()
        .expect("the report shows the mute");
    assert_eq!(shown.reason, "upgrade to 16");
    assert_eq!(shown.actor.as_deref(), Some("ops"));
    let json = serde_json::to_value(&*report).unwrap();
    assert_eq!(json["results"]["OK"][0]["mute"]["reason"], "upgrade to 16");
    assert!(
        report.public().results()[0].mute().is_none(),
        "the public view shows no mute"
    );

    tokio::time::sleep(61 * S).await;
    settle().await;
    assert!(registry.mutes().is_empty());
    assert!(registry.muted("db").is_none());
    assert!(registry.report().results()[0].mute().is_none());
    let mut announced = 0;
    while let Ok(event) = events.try_recv() {
        if matches!(event, Event::Mutes) {
            announced += 1;
        }
    }
    assert_eq!(announced, 2, "set, then ended by itself");
}

#[tokio::test(start_paused = true)]
async fn a_window_starts_and_ends_by_itself() {
    let registry = registry();
    registry
        .add(Steered::ok().dependency("db").build().unwrap())
        .unwrap();
    registry.refresh_all().await;
    let now = registry.clock().wall();
    let window = MuteWindow::Between {
        start: now + chrono::Duration::seconds(30),
        end: now + chrono::Duration::seconds(90),
    };
    let mute = registry.mute("db", window, "maintenance", None).unwrap();
    assert!(!mute.active, "scheduled");
    assert_eq!(registry.mutes().len(), 1);
    assert!(registry.report().results()[0].mute().is_none());

    tokio::time::sleep(31 * S).await;
    settle().await;
    assert!(registry.muted("db").is_some());
    assert!(
        registry.report().results()[0].mute().is_some(),
        "the cached report is built again when the window starts"
    );
    assert!(registry.mutes()[0].active);

    tokio::time::sleep(60 * S).await;
    settle().await;
    assert!(registry.report().results()[0].mute().is_none());
    assert!(registry.mutes().is_empty());
}

#[tokio::test(start_paused = true)]
async fn bad_mutes_change_nothing() {
    let registry = registry();
    registry
        .add(Steered::ok().dependency("db").build().unwrap())
        .unwrap();
    let now = registry.clock().wall();
    let between = |start: i64, end: i64| MuteWindow::Between {
        start: now + chrono::Duration::seconds(start),
        end: now + chrono::Duration::seconds(end),
    };
    assert!(registry
        .mute("nope", MuteWindow::For(S), "x", None)
        .unwrap_err()
        .is_not_found());
    for (window, reason) in [
        (between(60, 30), "x"),
        (between(-60, -30), "x"),
        (between(0, 31 * 86_400), "x"),
        (MuteWindow::For(Duration::ZERO), "x"),
        (MuteWindow::For(S), " "),
        (MuteWindow::For(S), "a\u{1b}[31m"),
    ] {
        assert!(
            registry
                .mute("db", window, reason, None)
                .unwrap_err()
                .is_invalid(),
            "{window:?} {reason:?}"
        );
    }
    assert!(registry
        .mute("db", MuteWindow::For(S), "x", Some("bad\nactor"))
        .unwrap_err()
        .is_invalid());
    assert!(registry.mutes().is_empty(), "nothing half-applied");
    assert!(registry.unmute("nope").unwrap_err().is_not_found());
    assert_eq!(registry.unmute("db").unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn mutes_are_bounded_replaced_and_dropped_with_their_dependency() {
    let registry = registry();
    for i in 0..=MAX_MUTES {
        registry
            .add(Steered::ok().dependency(&format!("d{i}")).build().unwrap())
            .unwrap();
    }
    for i in 0..MAX_MUTES {
        registry
            .mute(&format!("d{i}"), MuteWindow::For(60 * S), "x", None)
            .unwrap();
    }
    let over = registry
        .mute(&format!("d{MAX_MUTES}"), MuteWindow::For(60 * S), "x", None)
        .unwrap_err();
    assert!(over.is_invalid(), "{over}");
    // Replacing one already muted is not one more.
    let replaced = registry
        .mute("d0", MuteWindow::For(120 * S), "longer", None)
        .unwrap();
    assert_eq!(registry.mutes().len(), MAX_MUTES);
    assert_eq!(registry.mutes()[0].reason, "longer");
    assert_eq!(
        registry.unmute("d0").unwrap().unwrap().until,
        replaced.until
    );

    registry.remove("d1").unwrap();
    tokio::time::sleep(2 * S).await;
    settle().await;
    assert!(registry
        .mutes()
        .iter()
        .all(|m| m.dependency.as_str() != "d1"));
    assert_eq!(registry.mutes().len(), MAX_MUTES - 2);
}
