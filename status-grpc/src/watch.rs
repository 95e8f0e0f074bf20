//! The watches: one publisher task per service reads the registry's events and keeps one
//! `watch` channel per watched service, so that a change is computed once however many
//! streams follow it, and a slow reader only ever gets the latest status, never a backlog.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use status_core::{HoldSource, Probes, WeakProbes};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use crate::services;
use crate::sync::lock;
use crate::ServingStatus;

/// How often the publisher looks again without an event (a group or a feature registered
/// later, which raise none).
const SWEEP: Duration = Duration::from_secs(1);

/// How many watch streams may be open: in all, per connection, per peer address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub(crate) total: usize,
    pub(crate) connection: usize,
    pub(crate) peer: usize,
}

/// Why a watch was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The most are open on the server.
    Server,
    /// The most are open on this connection.
    Connection,
    /// The most are open from this peer address.
    Peer,
}

impl Refusal {
    pub(crate) const ALL: [Self; 3] = [Self::Server, Self::Connection, Self::Peer];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Server => "server",
            Self::Connection => "connection",
            Self::Peer => "peer",
        }
    }
}

/// Open watch streams by connection and by peer address.
#[derive(Debug, Default)]
struct Open {
    connections: HashMap<SocketAddr, usize>,
    peers: HashMap<IpAddr, usize>,
}

/// What the service and every stream share.
pub(crate) struct Watches {
    /// One channel per watched service; unknown ones carry SERVICE_UNKNOWN.
    channels: Mutex<HashMap<String, watch::Sender<ServingStatus>>>,
    /// Becomes true at the end of a shutdown's grace: every stream ends.
    closing: watch::Sender<bool>,
    pub(crate) open: AtomicUsize,
    by_peer: Mutex<Open>,
    /// Refused, by [`Refusal`] in the order of [`Refusal::ALL`].
    refused: [AtomicU64; 3],
    pub(crate) caps: Caps,
    pub(crate) grace: Duration,
    started: AtomicBool,
}

impl Watches {
    pub(crate) fn new(caps: Caps, grace: Duration) -> Self {
        Self {
            channels: Mutex::default(),
            closing: watch::channel(false).0,
            open: AtomicUsize::new(0),
            by_peer: Mutex::default(),
            refused: Default::default(),
            caps,
            grace,
            started: AtomicBool::new(false),
        }
    }

    /// Watches refused for `why`, since start.
    pub(crate) fn refused(&self, why: Refusal) -> u64 {
        self.refused[why as usize].load(Ordering::Relaxed)
    }

    /// A place for one more stream from `remote` (when the server says who it is), or why
    /// not (counted).
    pub(crate) fn enter(self: &Arc<Self>, remote: Option<SocketAddr>) -> Result<Slot, Refusal> {
        let refuse = |why: Refusal| {
            self.refused[why as usize].fetch_add(1, Ordering::Relaxed);
            Err(why)
        };
        let open = self.open.fetch_add(1, Ordering::AcqRel);
        if open >= self.caps.total {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return refuse(Refusal::Server);
        }
        if let Some(remote) = remote {
            let mut by = lock(&self.by_peer);
            let on_connection = by.connections.get(&remote).copied().unwrap_or(0);
            let from_peer = by.peers.get(&remote.ip()).copied().unwrap_or(0);
            if on_connection >= self.caps.connection || from_peer >= self.caps.peer {
                drop(by);
                self.open.fetch_sub(1, Ordering::AcqRel);
                return refuse(if on_connection >= self.caps.connection {
                    Refusal::Connection
                } else {
                    Refusal::Peer
                });
            }
            *by.connections.entry(remote).or_default() += 1;
            *by.peers.entry(remote.ip()).or_default() += 1;
        }
        Ok(Slot {
            watches: Arc::clone(self),
            remote,
        })
    }

    /// The channel of `service` (made if new, with its status now) and the closing signal;
    /// starts the publisher on the first call.
    pub(crate) fn subscribe(
        self: &Arc<Self>,
        probes: &Probes,
        service: &str,
    ) -> (watch::Receiver<ServingStatus>, watch::Receiver<bool>) {
        if !self.started.swap(true, Ordering::AcqRel) {
            tokio::spawn(publish(Arc::clone(self), probes.downgrade()));
        }
        let mut channels = lock(&self.channels);
        let receiver = channels
            .entry(service.to_owned())
            .or_insert_with(|| {
                let now =
                    services::status(probes, service).unwrap_or(ServingStatus::ServiceUnknown);
                watch::channel(now).0
            })
            .subscribe();
        (receiver, self.closing.subscribe())
    }

    /// Computes every watched service's status again, sending only what changed, and forgets
    /// the channels nobody follows any more.
    fn refresh(&self, probes: &Probes) {
        let mut channels = lock(&self.channels);
        channels.retain(|_, sender| sender.receiver_count() > 0);
        for (service, sender) in channels.iter() {
            let now = services::status(probes, service).unwrap_or(ServingStatus::ServiceUnknown);
            sender.send_if_modified(|status| std::mem::replace(status, now) != now);
        }
    }
}

/// One open stream, counted until dropped.
pub(crate) struct Slot {
    watches: Arc<Watches>,
    /// Where it came from, when counted by connection and peer.
    remote: Option<SocketAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let watches = &self.watches;
        if let Some(remote) = self.remote {
            let mut by = lock(&watches.by_peer);
            let release = |count: Option<&mut usize>| {
                count.is_some_and(|n| {
                    *n -= 1;
                    *n == 0
                })
            };
            if release(by.connections.get_mut(&remote)) {
                by.connections.remove(&remote);
            }
            if release(by.peers.get_mut(&remote.ip())) {
                by.peers.remove(&remote.ip());
            }
        }
        watches.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The publisher: on every event of the registry (and every [`SWEEP`]), the watched
/// services' statuses again; at the end of a shutdown's grace, the end of every stream.
/// Ends with the registry.
async fn publish(watches: Arc<Watches>, probes: WeakProbes) {
    let Some(mut events) = probes.upgrade().map(|p| p.registry().subscribe()) else {
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
        let Some(probes) = probes.upgrade() else {
            break;
        };
        watches.refresh(&probes);
        if shutdown_at.is_none()
            && probes
                .registry()
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
