//! Objectives on a real registry under Tokio's paused time: the alarms the beat tells, once,
//! kept across a restart; the figures equal the time the dependency spent.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use status_core::{check, CheckStatus, Clock, Dependency, Registry, Urgency};
use status_history::objective::{self, Objective, Severity};
use status_history::History;

fn temp(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("status-history-slo-{}-{name}", std::process::id()));
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
}

fn objectives() -> Vec<Objective> {
    vec![
        "db=dependency:db@99/30d".parse().unwrap(),
        "all=system@99.9/1d".parse().unwrap(),
    ]
}

async fn run_for(d: Duration) {
    let step = Duration::from_millis(500);
    let mut left = d;
    while !left.is_zero() {
        tokio::time::sleep(step.min(left)).await;
        left = left.saturating_sub(step);
    }
}

#[tokio::test(start_paused = true)]
async fn an_outage_pages_once_across_a_restart_and_its_end_is_told() {
    let path = temp("page");
    let level = Arc::new(AtomicU8::new(0));
    let registry = make(start(), &level);
    objective::check(&objectives(), &registry).unwrap();
    let unknown: Objective = "x=dependency:nope@99/1d".parse().unwrap();
    let e = objective::check(&[unknown], &registry).unwrap_err();
    assert!(e.to_string().contains("dependency:nope"), "{e}");

    let history = History::sqlite(&path).objectives(objectives()).open();
    let mut alarms = history.alarms();
    history.attach(&registry);
    history.restored().await;
    run_for(Duration::from_secs(600)).await;
    let before = history.slos().await.unwrap();
    assert_eq!(before[0].bad_ms, 0);
    assert!(
        before[0].observed_ms >= 590_000,
        "{}",
        before[0].observed_ms
    );
    assert!(alarms.try_recv().is_err(), "nothing burns");

    // Ten minutes of outage: the fast page fires (14.4 × 1 % over 1h and 5m).
    level.store(3, Ordering::SeqCst);
    run_for(Duration::from_secs(600)).await;
    let mut told = Vec::new();
    while let Ok(change) = alarms.try_recv() {
        told.push(change);
    }
    let page: Vec<_> = told
        .iter()
        .filter(|c| c.slo == "db" && c.severity == Severity::Page && c.firing)
        .collect();
    assert!(!page.is_empty(), "{told:?}");
    assert!(told.iter().all(|c| c.firing), "nothing ended: {told:?}");
    assert_eq!(
        told.iter()
            .filter(|c| c.slo == "db" && c.long == "1h")
            .count(),
        1,
        "told once: {told:?}"
    );
    let report = history.slo_named("db").await.unwrap().unwrap();
    assert!(report.firing(Severity::Page));
    let since = report.alerts[0].since.unwrap();
    // The bad time is the outage's, to the check: ten minutes, give or take a beat.
    assert!(
        (590_000..=602_000).contains(&report.bad_ms),
        "{}",
        report.bad_ms
    );
    assert!(report.budget.remaining < 0.0, "{:?}", report.budget);
    assert!(history.slo_named("nope").await.unwrap().is_none());
    history.flush().await;
    drop(registry);
    history.close().await;

    // Restarted a minute later, still down: the page is not told again, its start kept.
    let now = start() + chrono::Duration::minutes(21);
    let registry = make(now, &level);
    let history = History::sqlite(&path).objectives(objectives()).open();
    let mut alarms = history.alarms();
    history.attach(&registry);
    history.restored().await;
    run_for(Duration::from_secs(60)).await;
    let report = history.slo_named("db").await.unwrap().unwrap();
    assert_eq!(report.alerts[0].since, Some(since));
    assert!(alarms.try_recv().is_err(), "not told again after a restart");

    // Back up: the short window cools within minutes and the end is told, once.
    level.store(0, Ordering::SeqCst);
    run_for(Duration::from_secs(900)).await;
    let mut ended = Vec::new();
    while let Ok(change) = alarms.try_recv() {
        ended.push(change);
    }
    let fast: Vec<_> = ended
        .iter()
        .filter(|c| c.slo == "db" && c.long == "1h")
        .collect();
    assert_eq!(fast.len(), 1, "{ended:?}");
    assert!(!fast[0].firing && fast[0].since == since);
    assert!(!history.slo_named("db").await.unwrap().unwrap().alerts[0].firing);
}

#[tokio::test(start_paused = true)]
async fn an_exclusion_takes_an_outage_out_of_the_objective_and_its_removal_puts_it_back() {
    use status_history::{NewExclusion, Series};
    let path = temp("exclude");
    let level = Arc::new(AtomicU8::new(0));
    let registry = make(start(), &level);
    let history = History::sqlite(&path).objectives(objectives()).open();
    history.attach(&registry);
    history.restored().await;
    run_for(Duration::from_secs(300)).await;
    level.store(3, Ordering::SeqCst);
    run_for(Duration::from_secs(240)).await;
    level.store(0, Ordering::SeqCst);
    run_for(Duration::from_secs(120)).await;
    let before = history.slo_named("db").await.unwrap().unwrap();
    assert!(
        (239_000..=241_000).contains(&before.bad_ms),
        "{}",
        before.bad_ms
    );
    let uptime_before = history
        .uptime_over(Series::Dependency("db".into()), chrono::Duration::hours(1))
        .await
        .unwrap();

    let new = |from: i64, to: i64| NewExclusion {
        series: Series::Dependency("db".into()),
        from: start() + chrono::Duration::seconds(from),
        to: start() + chrono::Duration::seconds(to),
        reason: "planned failover".into(),
        actor: Some("alice".into()),
    };
    // From minute 5 to minute 9: the outage, whole minutes.
    let e = history.exclude(&new(300, 540)).await.unwrap();
    assert_eq!(
        (e.from, e.to),
        (
            start() + chrono::Duration::minutes(5),
            start() + chrono::Duration::minutes(9)
        )
    );
    let after = history.slo_named("db").await.unwrap().unwrap();
    assert_eq!(after.bad_ms, 0, "excluded time is not bad");
    assert_eq!(
        after.observed_ms + 240_000,
        before.observed_ms,
        "nor observed"
    );
    let uptime = history
        .uptime_over(Series::Dependency("db".into()), chrono::Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(uptime.spent.outage, 0);
    assert_eq!(uptime.spent.muted, uptime_before.spent.muted + 240_000);
    assert_eq!(uptime.uptime, Some(1.0));
    let tiles = history
        .days(Series::Dependency("db".into()), 1)
        .await
        .unwrap();
    assert_eq!(
        tiles[0].muted_ms, 240_000,
        "the day shows it as maintenance"
    );

    // Refusals keep nothing.
    let overlap = history.exclude(&new(480, 600)).await.unwrap_err();
    assert!(overlap.is_conflict(), "{overlap}");
    let future = history.exclude(&new(600, 7_200)).await.unwrap_err();
    assert!(
        future.is_invalid() && future.to_string().contains("future"),
        "{future}"
    );
    let reversed = history.exclude(&new(600, 500)).await.unwrap_err();
    assert!(reversed.is_invalid(), "{reversed}");
    let short = history.exclude(&new(600, 620)).await.unwrap_err();
    assert!(short.is_invalid(), "{short}");
    let blank = NewExclusion {
        reason: " ".into(),
        ..new(0, 60)
    };
    assert!(history.exclude(&blank).await.unwrap_err().is_invalid());
    assert_eq!(history.exclusions().await.unwrap().len(), 1);

    // Kept across a restart.
    history.flush().await;
    drop(registry);
    history.close().await;
    let registry = make(start() + chrono::Duration::minutes(12), &level);
    let history = History::sqlite(&path).objectives(objectives()).open();
    history.attach(&registry);
    history.restored().await;
    let kept = history.exclusions().await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].reason, "planned failover");
    assert_eq!(history.slo_named("db").await.unwrap().unwrap().bad_ms, 0);
    let removed = history.remove_exclusion(kept[0].id).await.unwrap().unwrap();
    assert_eq!(removed.id, kept[0].id);
    assert!(history
        .remove_exclusion(kept[0].id)
        .await
        .unwrap()
        .is_none());
    let back = history.slo_named("db").await.unwrap().unwrap();
    assert_eq!(back.bad_ms, before.bad_ms, "its time counts again");
}
