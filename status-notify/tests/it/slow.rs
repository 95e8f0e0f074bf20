//! The driver's tick never awaits I/O: a burst of changes is told on time while the fleet's
//! store (behind the chorus) and the history (behind incident links) are slow, on Tokio's
//! paused time. Before, each notice waited for its chorus and its link in turn: thirty
//! failures took thirty times the slowest of the two.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use status_core::{check, CheckStatus, Dependency, DependencyId, Registry, Urgency};
use status_notify::{
    Chorus, IncidentLink, Message, NoticePolicy, Notifications, Recovered, Sink, SinkError, Voice,
};
use tokio::time::Instant;

const BURST: usize = 30;

/// Every message with when it arrived.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<(Instant, Message)>>>);

impl Sink for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn deliver<'a>(
        &'a self,
        message: &'a Message,
        _timeout: Duration,
    ) -> BoxFuture<'a, Result<(), SinkError>> {
        self.0
            .lock()
            .unwrap()
            .push((Instant::now(), message.clone()));
        Box::pin(async { Ok(()) })
    }
}

/// A chorus whose store answers every call after `delay`, and then says the failure is
/// this instance's own.
struct SlowStore {
    delay: Duration,
}

impl Chorus for SlowStore {
    fn changed<'a>(&'a self, _: &'a DependencyId, _: CheckStatus) -> BoxFuture<'a, Voice> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Voice::Mine
        })
    }

    fn recovered(&self) -> BoxFuture<'_, Vec<Recovered>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Vec::new()
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_told_on_time_while_the_store_and_the_history_are_slow() {
    let registry = Registry::builder().jitter(0.0).build();
    let down = Arc::new(Mutex::new(false));
    for i in 0..BURST {
        let down = Arc::clone(&down);
        registry
            .add(
                Dependency::builder(
                    format!("dep-{i:02}"),
                    check::tiered(move || {
                        let s = if *down.lock().unwrap() {
                            CheckStatus::Outage
                        } else {
                            CheckStatus::Ok
                        };
                        async move { s }
                    }),
                )
                .urgency(Urgency::Weak)
                .failures_before_outage(1)
                .period(Duration::from_secs(3600))
                .build()
                .unwrap(),
            )
            .unwrap();
    }
    registry.refresh_all().await;
    let sink = Recording::default();
    let lookups = Arc::new(Mutex::new(0usize));
    let counted = Arc::clone(&lookups);
    let _notifications = Notifications::builder(&registry)
        .policy(NoticePolicy {
            hold: Duration::ZERO,
            // Each told alone (thirty, and the system's): not one digest.
            digest_above: BURST + 1,
            ..NoticePolicy::default()
        })
        .tick(Duration::from_millis(100))
        .sink(sink.clone())
        .chorus(SlowStore {
            delay: Duration::from_secs(2),
        })
        // The history answers after ten seconds: past the three the driver waits.
        .incidents(move |_| {
            *counted.lock().unwrap() += 1;
            async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Some(IncidentLink {
                    id: "late".into(),
                    url: None,
                })
            }
        })
        .start()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    *down.lock().unwrap() = true;
    let failed = Instant::now();
    registry.refresh_all().await;
    tokio::time::sleep(Duration::from_secs(30)).await;

    let got = sink.0.lock().unwrap().clone();
    let changed: Vec<&(Instant, Message)> = got
        .iter()
        .filter(|(_, m)| m.text.starts_with("dep-"))
        .collect();
    assert_eq!(
        changed.len(),
        BURST,
        "{:?}",
        got.iter().map(|(_, m)| &m.text).collect::<Vec<_>>()
    );
    let last = changed.iter().map(|(at, _)| *at).max().unwrap() - failed;
    // A tick, the chorus's two seconds and the link's three, side by side for all thirty:
    // never thirty times them.
    assert!(
        last <= Duration::from_secs(6),
        "the last of the burst told {last:?} after the failure"
    );
    assert!(
        changed.iter().all(|(_, m)| m.incident.is_none()),
        "a link past its patience is left out"
    );
    assert_eq!(*lookups.lock().unwrap(), BURST + 1, "one lookup a message");
}
