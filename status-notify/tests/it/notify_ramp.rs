//! Hysteresis and notifications together, with the defaults, on paused time: a database
//! that stops is told once as OUTAGE (and the system with it), never first as the MINOR its
//! hysteresis ramp reports on the way; a blip shorter than the ramp is told not at all.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use status_core::{check, CheckStatus, Dependency, Registry, Urgency};
use status_notify::{Message, Notice, Notifications, Sink, SinkError};

/// Keeps every message it is given (a sink in memory: time is paused, sockets are not).
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
    /// Every notice told, digests opened, as sentences.
    fn told(&self) -> Vec<String> {
        let mut out = Vec::new();
        for notice in self.0.lock().unwrap().iter() {
            match notice {
                Notice::Digest { notices, .. } => out.extend(notices.iter().map(Notice::text)),
                other => out.push(other.text()),
            }
        }
        out
    }
}

#[tokio::test(start_paused = true)]
async fn an_outage_is_told_once_never_first_as_the_ramps_minor() {
    let registry = Registry::builder().jitter(0.0).build();
    let up = Arc::new(Mutex::new(true));
    let state = Arc::clone(&up);
    // The defaults: checked every 30 s, three failures before its real status.
    registry
        .add(
            Dependency::builder(
                "database",
                check::ping(move || {
                    let up = *state.lock().unwrap();
                    async move {
                        if up {
                            Ok(())
                        } else {
                            Err(std::io::Error::other("connection refused"))
                        }
                    }
                }),
            )
            .urgency(Urgency::Required)
            .build()
            .unwrap(),
        )
        .unwrap();
    let kept = Kept::default();
    // The default policy: a 30 s hold.
    let _notifications = Notifications::builder(&registry)
        .sink(kept.clone())
        .start()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(kept.told().is_empty(), "healthy: {:?}", kept.told());

    // A blip: one failed check, then fine again. The ramp's MINOR is never told.
    *up.lock().unwrap() = false;
    tokio::time::sleep(Duration::from_secs(30)).await;
    *up.lock().unwrap() = true;
    tokio::time::sleep(Duration::from_secs(180)).await;
    assert!(kept.told().is_empty(), "a blip: {:?}", kept.told());

    // The database stops for good: MINOR, MINOR, then OUTAGE on the third failure.
    *up.lock().unwrap() = false;
    tokio::time::sleep(Duration::from_secs(300)).await;
    assert_eq!(registry.condition(), CheckStatus::Outage);
    assert_eq!(
        kept.told(),
        [
            "database is OUTAGE (was OK)".to_owned(),
            "the system is OUTAGE (was OK)".to_owned()
        ],
        "told once each, never as MINOR first"
    );

    // Back: resolved, once each.
    *up.lock().unwrap() = true;
    tokio::time::sleep(Duration::from_secs(300)).await;
    let told = kept.told();
    assert_eq!(
        told[2..],
        [
            "database is OK again (was OUTAGE)".to_owned(),
            "the system is OK (was OUTAGE)".to_owned()
        ],
        "{told:?}"
    );
}
