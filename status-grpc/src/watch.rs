//! The watches: one publisher task per service reads the registry's events and keeps one
//! `watch` channel per watched service, so that a change is computed once however many
//! streams follow it, and a slow reader only ever gets the latest status, never a backlog.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use status_core::{HoldSource, Registry, WeakRegistry};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use crate::services;
use crate::ServingStatus;

/// How often the publisher looks again without an event (a group or a feature registered
/// later, which raise none).
const SWEEP: Duration = Duration::from_secs(1);

/// What the service and every stream share.
pub(crate) struct Watches {
    /// One channel per watched service; unknown ones carry SERVICE_UNKNOWN.
    channels: Mutex<HashMap<String, watch::Sender<ServingStatus>>>,
    /// Becomes true at the end of a shutdown's grace: every stream ends.
    closing: watch::Sender<bool>,
    pub(crate) open: AtomicUsize,
    pub(crate) refused: AtomicU64,
    pub(crate) max: usize,
    pub(crate) grace: Duration,
    started: AtomicBool,
}

impl Watches {
    pub(crate) fn new(max: usize, grace: Duration) -> Self {
        Self {
            channels: Mutex::default(),
            closing: watch::channel(false).0,
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            max,
            grace,
            started: AtomicBool::new(false),
        }
    }

    /// A place for one more stream, or `None` when `max` are open (counted as refused).
    pub(crate) fn enter(self: &Arc<Self>) -> Option<Slot> {
        let open = self.open.fetch_add(1, Ordering::AcqRel);
        if open >= self.max {
            self.open.fetch_sub(1, Ordering::AcqRel);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(Slot(Arc::clone(self)))
    }

    /// The channel of `service` (made if new, with its status now) and the closing signal;
    /// starts the publisher on the first call.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        registry: &Registry,
        service: &str,
    ) -> (watch::Receiver<ServingStatus>, watch::Receiver<bool>) {
        if !self.started.swap(true, Ordering::AcqRel) {
            tokio::spawn(publish(Arc::clone(self), registry.downgrade()));
        }
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        let receiver = channels
            .entry(service.to_owned())
            .or_insert_with(|| {
                let holds = services::Holds::read(registry);
                let now = services::status(registry, &holds, service)
                    .unwrap_or(ServingStatus::ServiceUnknown);
                watch::channel(now).0
            })
            .subscribe();
        (receiver, self.closing.subscribe())
    }

    /// Computes every watched service's status again, sending only what changed, and forgets
    /// the channels nobody follows any more.
    fn refresh(&self, registry: &Registry) {
        let mut channels = self.channels.lock().unwrap_or_else(PoisonError::into_inner);
        channels.retain(|_, sender| sender.receiver_count() > 0);
        let holds = services::Holds::read(registry);
        for (service, sender) in channels.iter() {
            let now = services::status(registry, &holds, service)
                .unwrap_or(ServingStatus::ServiceUnknown);
            sender.send_if_modified(|status| std::mem::replace(status, now) != now);
        }
    }
}

/// One open stream, counted until dropped.
pub(crate) struct Slot(Arc<Watches>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The publisher: on every event of the registry (and every [`SWEEP`]), the watched
/// services' statuses again; at the end of a shutdown's grace, the end of every stream.
/// Ends with the registry.
async fn publish(watches: Arc<Watches>, registry: WeakRegistry) {
    let Some(mut events) = registry.upgrade().map(|r| r.subscribe()) else {
        return;
    };
    let mut shutdown_at: Option<tokio::time::Instant> = None;
    loop {
        let closing_due = async {
            match shutdown_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.recv() => match event {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            },
            () = tokio::time::sleep(SWEEP) => {}
            () = closing_due => {
                watches.closing.send_replace(true);
                tracing::info!("gRPC health: shutdown grace over, watch streams closed");
                return;
            }
        }
        let Some(registry) = registry.upgrade() else {
            break;
        };
        watches.refresh(&registry);
        if shutdown_at.is_none()
            && registry
                .holds()
                .iter()
                .any(|h| h.source == HoldSource::Shutdown)
        {
            shutdown_at = Some(tokio::time::Instant::now() + watches.grace);
        }
    }
    // The registry is gone: nothing will change again.
    watches.closing.send_replace(true);
}
