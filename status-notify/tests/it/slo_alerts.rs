//! An objective's burn-rate alerts through the notifier (feature `history`), on paused time:
//! an outage pages once and its end is told once; a muted dependency's outage is neither
//! good nor bad time, and nothing is told of it.
#![cfg(feature = "history")]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use status_core::{check, CheckStatus, Dependency, MuteWindow, Registry, Urgency};
use status_history::History;
use status_notify::{Message, Notice, Notifications, Sink, SinkError};

/// Keeps every notice it is given (time is paused, sockets are not).
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<Notice>>>);

impl Sink for Kept {
    fn name(&self) -> &str {
        "kept"
    }

    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        _: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        self.0.lock().unwrap().push(message.notice.clone());
        Box::pin(async { Ok(()) })
    }
}

impl Kept {
    /// The objectives' notices, digests opened: (objective, long window, firing), and text.
    fn slos(&self) -> Vec<(String, String, bool, String)> {
        let mut out = Vec::new();
        let mut add = |n: &Notice| {
            if let Notice::Slo(a) = n {
                out.push((a.slo.clone(), a.long.clone(), a.firing, n.text()));
            }
        };
        for notice in self.0.lock().unwrap().iter() {
            match notice {
                Notice::Digest { notices, .. } => notices.iter().for_each(&mut add),
                other => add(other),
            }
        }
        out
    }
}

fn dependency(id: &str, level: &Arc<AtomicU8>) -> Dependency {
    let level = level.clone();
    Dependency::builder(
        id,
        check::tiered(move || {
            let level = level.clone();
            async move {
                let status = CheckStatus::from_severity(level.load(Ordering::SeqCst)).unwrap();
                (status, format!("{status}"))
            }
        }),
    )
    .urgency(Urgency::Strong)
    .period(Duration::from_secs(1))
    .failures_before_outage(1)
    .build()
    .unwrap()
}

async fn run_for(secs: u64) {
    for _ in 0..secs {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_burning_objective_pages_once_and_its_end_is_told_once_unless_muted() {
    let registry = Registry::builder()
        .clock(status_core::Clock::tokio_starting_at(
            chrono::DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
                .unwrap()
                .to_utc(),
        ))
        .jitter(0.0)
        .build();
    let (db, cache) = (Arc::new(AtomicU8::new(0)), Arc::new(AtomicU8::new(0)));
    registry.add(dependency("db", &db)).unwrap();
    registry.add(dependency("cache", &cache)).unwrap();
    let history = History::in_memory()
        .objectives([
            "db=dependency:db@99/30d".parse().unwrap(),
            "cache=dependency:cache@99/30d".parse().unwrap(),
        ])
        .open();
    history.attach(&registry);
    history.restored().await;
    let kept = Kept::default();
    let _notifications = Notifications::builder(&registry)
        .history(&history, None)
        .sink(kept.clone())
        .start()
        .unwrap();
    run_for(300).await;
    registry
        .mute(
            "cache",
            MuteWindow::For(Duration::from_secs(7200)),
            "planned",
            None,
        )
        .unwrap();
    db.store(3, Ordering::SeqCst);
    cache.store(3, Ordering::SeqCst);
    run_for(600).await;
    let told = kept.slos();
    let fast: Vec<_> = told.iter().filter(|t| t.0 == "db" && t.1 == "1h").collect();
    assert_eq!(fast.len(), 1, "{told:?}");
    assert!(fast[0].2, "started");
    assert!(
        fast[0]
            .3
            .starts_with("objective db (dependency:db) burns its error budget")
            && fast[0].3.contains(": page;"),
        "{}",
        fast[0].3
    );
    assert!(told.iter().all(|t| t.0 != "cache"), "muted: {told:?}");
    let cache = history.slo_named("cache").await.unwrap().unwrap();
    assert_eq!(cache.bad_ms, 0, "muted time is not bad");
    assert!(
        cache.observed_ms <= 301_000,
        "nor observed: {}",
        cache.observed_ms
    );

    db.store(0, Ordering::SeqCst);
    run_for(900).await;
    let told = kept.slos();
    let fast: Vec<_> = told.iter().filter(|t| t.0 == "db" && t.1 == "1h").collect();
    assert_eq!(fast.len(), 2, "{told:?}");
    assert!(
        !fast[1].2 && fast[1].3.contains("no longer burns"),
        "{}",
        fast[1].3
    );
    assert!(told.iter().all(|t| t.0 != "cache"), "muted: {told:?}");
}
