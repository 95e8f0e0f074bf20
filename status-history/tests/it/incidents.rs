//! Incidents on a real registry, under Tokio's paused time: a root and its dependents are one
//! incident, which resolves after the quiet time, survives a restart, and takes operators'
//! updates.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use status_core::{check, CheckStatus, Clock, Dependency, Registry, Urgency};
use status_history::incident::{Impact, UpdateKind, UpdateStatus};
use status_history::History;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "status-history-incidents-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("history.db")
}

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 20, 10, 0, 0).unwrap()
}

fn leveled(level: &Arc<AtomicU8>) -> impl status_core::check::Check {
    let level = level.clone();
    check::tiered(move || {
        let level = level.clone();
        async move {
            let status = CheckStatus::from_severity(level.load(Ordering::SeqCst)).unwrap();
            (status, format!("it is {status}"))
        }
    })
}

/// `db` (Required) at `level`, `dependents` Weak dependencies of it that fail with it, and
/// `cache` (Strong) on its own.
fn make(
    at: DateTime<Utc>,
    db: &Arc<AtomicU8>,
    cache: &Arc<AtomicU8>,
    dependents: usize,
) -> Registry {
    let registry = Registry::builder()
        .clock(Clock::tokio_starting_at(at))
        .jitter(0.0)
        .build();
    let dep = |id: String, level: &Arc<AtomicU8>, urgency| {
        Dependency::builder(id, leveled(level))
            .urgency(urgency)
            .period(Duration::from_secs(1))
            .failures_before_outage(1)
    };
    registry
        .add(dep("db".into(), db, Urgency::Required).build().unwrap())
        .unwrap();
    registry
        .add(dep("cache".into(), cache, Urgency::Strong).build().unwrap())
        .unwrap();
    for i in 0..dependents {
        registry
            .add(
                dep(format!("api-{i}"), db, Urgency::Weak)
                    .depends_on("db")
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
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
async fn a_failing_root_and_its_thirty_dependents_are_one_incident_resolved_after_the_quiet_time() {
    let path = temp("root");
    let (db, cache) = (Arc::new(AtomicU8::new(0)), Arc::new(AtomicU8::new(0)));
    let registry = make(start(), &db, &cache, 30);
    let history = History::sqlite(&path)
        .incident_quiet(Duration::from_secs(120))
        .open();
    history.attach(&registry);
    run_for(Duration::from_secs(10)).await;
    db.store(3, Ordering::SeqCst);
    run_for(Duration::from_secs(30)).await;
    history.flush().await;

    let since = registry.clock().wall() - chrono::Duration::days(1);
    let incidents = history.incidents(since, 10).await.unwrap();
    assert_eq!(incidents.len(), 1, "{incidents:#?}");
    let incident = &incidents[0];
    assert_eq!(incident.roots, ["db"]);
    assert_eq!(incident.affected.len(), 31, "db and its 30 dependents");
    assert_eq!(incident.affected["db"], CheckStatus::Outage);
    assert_eq!(incident.impact, Impact::Critical);
    assert_eq!(incident.resolved, None);
    assert_eq!(incident.status(), UpdateStatus::Investigating);
    assert_eq!(incident.updates.len(), 1, "the engine's first word");
    assert!(incident.updates[0]
        .message
        .starts_with("db fails; it affects api-0"));

    // An operator's word, refused when malformed, kept when not.
    let id = incident.id;
    let blank = history
        .post_update(id, UpdateStatus::Identified, "  ", Some("ana"))
        .await
        .unwrap_err();
    assert!(blank.is_invalid() && !blank.is_store(), "{blank}");
    let missing = history
        .post_update(id + 100, UpdateStatus::Identified, "x", None)
        .await
        .unwrap_err();
    assert!(missing.is_not_found() && !missing.is_invalid(), "{missing}");
    let posted = history
        .post_update(
            id,
            UpdateStatus::Identified,
            "The primary lost its disk.",
            Some("ana"),
        )
        .await
        .unwrap();
    assert_eq!(posted.actor.as_deref(), Some("ana"));
    let incident = history.incident(id).await.unwrap().unwrap();
    assert_eq!(incident.status(), UpdateStatus::Identified);
    assert_eq!(incident.updates.len(), 2);

    // A postmortem follows the resolution.
    let open = history
        .post_postmortem(id, "Too soon.", None)
        .await
        .unwrap_err();
    assert!(open.is_conflict(), "{open}");

    // Recovery: still open within the quiet time, resolved after it, dated at recovery.
    db.store(0, Ordering::SeqCst);
    run_for(Duration::from_secs(60)).await;
    history.flush().await;
    let incident = history.incident(id).await.unwrap().unwrap();
    assert_eq!(incident.resolved, None, "within the quiet time");
    run_for(Duration::from_secs(80)).await;
    history.flush().await;
    let incident = history.incident(id).await.unwrap().unwrap();
    let resolved = incident.resolved.expect("resolved after the quiet time");
    let recovered = (start() + chrono::Duration::seconds(40)).timestamp_millis();
    assert!(
        (recovered..recovered + 3_000).contains(&resolved),
        "dated when everything recovered: {resolved} vs {recovered}"
    );
    assert_eq!(incident.status(), UpdateStatus::Resolved);
    assert_eq!(incident.updates.last().unwrap().actor, None);
    assert_eq!(incident.postmortem, None);
    let bad = history.post_postmortem(id, "a\tb", None).await.unwrap_err();
    assert!(bad.is_invalid(), "{bad}");
    let missing = history
        .post_postmortem(id + 100, "x", None)
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    let written = history
        .post_postmortem(id, "The disk filled.\r\n\r\nWe alert sooner.", Some("ana"))
        .await
        .unwrap();
    assert_eq!(written.body, "The disk filled.\n\nWe alert sooner.");
    let kept = history.incident(id).await.unwrap().unwrap().postmortem;
    assert_eq!(kept, Some(written));

    // A Strong dependency at MAJOR is another incident, of its own root.
    cache.store(2, Ordering::SeqCst);
    run_for(Duration::from_secs(5)).await;
    history.flush().await;
    let incidents = history.incidents(since, 10).await.unwrap();
    assert_eq!(incidents.len(), 2);
    assert_eq!(incidents[0].roots, ["cache"]);
    assert_eq!(incidents[0].impact, Impact::Major);
}

#[tokio::test(start_paused = true)]
async fn an_incident_open_at_a_restart_goes_on_and_a_failure_within_the_quiet_time_reopens_it() {
    let path = temp("restart");
    let (db, cache) = (Arc::new(AtomicU8::new(3)), Arc::new(AtomicU8::new(0)));
    {
        let registry = make(start(), &db, &cache, 2);
        let history = History::sqlite(&path)
            .incident_quiet(Duration::from_secs(60))
            .open();
        history.attach(&registry);
        run_for(Duration::from_secs(10)).await;
        history.flush().await;
    }
    // The next life: db still fails, then recovers and fails again soon after resolving.
    let registry = make(start() + chrono::Duration::minutes(2), &db, &cache, 2);
    let history = History::sqlite(&path)
        .incident_quiet(Duration::from_secs(60))
        .open();
    history.attach(&registry);
    run_for(Duration::from_secs(10)).await;
    history.flush().await;
    let since = start() - chrono::Duration::days(1);
    let incidents = history.incidents(since, 10).await.unwrap();
    assert_eq!(
        incidents.len(),
        1,
        "the same incident goes on: {incidents:#?}"
    );
    let id = incidents[0].id;

    db.store(0, Ordering::SeqCst);
    run_for(Duration::from_secs(70)).await;
    history.flush().await;
    assert!(history
        .incident(id)
        .await
        .unwrap()
        .unwrap()
        .resolved
        .is_some());
    db.store(3, Ordering::SeqCst);
    run_for(Duration::from_secs(10)).await;
    history.flush().await;
    let incidents = history.incidents(since, 10).await.unwrap();
    assert_eq!(incidents.len(), 1, "reopened, not another: {incidents:#?}");
    assert_eq!(incidents[0].resolved, None);
    assert!(incidents[0]
        .updates
        .iter()
        .any(|u| u.kind == UpdateKind::Reopened && u.actor.is_none()));
}
