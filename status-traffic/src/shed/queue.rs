//! The layer's shared state: the limiter, and the [`WaitingRoom`] behind a lock with a
//! channel per waiter.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use status_core::Clock;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::error::QueueFull;
use super::room::{expiry, Expired, WaitingRoom};
use super::ShedSample;
use crate::limit::{Lease, Limiter, Ticket};
use crate::sync::lock;

/// What a waiter is sent: a lease, or why it leaves without one.
pub(super) type Admission = Result<Lease, Refusal>;

/// Why a waiter leaves the queue without a lease.
#[derive(Debug)]
pub(super) enum Refusal {
    /// A request of higher priority took its place.
    Evicted,
    /// Its time ran out ([`expiry`]).
    Expired(Expired),
}

/// How a waiter is woken.
type Waiter = oneshot::Sender<Admission>;

/// A layer's settings.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settings {
    pub(super) capacity: usize,
    pub(super) queue_timeout: Duration,
    pub(super) deadline: Duration,
    /// Serve the newest first once the oldest of the top priority has waited this long.
    pub(super) lifo_after: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            capacity: 64,
            queue_timeout: Duration::from_secs(1),
            deadline: Duration::from_secs(2),
            lifo_after: Some(Duration::from_millis(250)),
        }
    }
}

/// Counts of refusals, by reason.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) queue_full: AtomicU64,
    pub(super) queue_timeout: AtomicU64,
    pub(super) elapsed: AtomicU64,
}

/// How a request's priority is read.
pub(super) type Priority<R> = Arc<dyn Fn(&R) -> u8 + Send + Sync>;

/// What every clone of a layer, its services and their futures share (one `Arc`: a service
/// is cloned per request by some routers, and every shared counter it touches is a cache line
/// the cores pass around).
pub(super) struct Shared<R> {
    pub(super) priority: Priority<R>,
    pub(super) limiter: Limiter,
    pub(super) settings: Settings,
    pub(super) clock: Clock,
    pub(super) counts: Counts,
    waiting: Mutex<WaitingRoom<Waiter>>,
    /// The queue's length as last left under its lock: lets the common case (nobody waiting)
    /// skip the lock on the way in and on the way out.
    waiters: AtomicUsize,
    history: Mutex<VecDeque<ShedSample>>,
}

/// How a request gets in.
pub(super) enum Entry {
    Now(Ticket),
    Wait(oneshot::Receiver<Admission>),
}

impl<R> std::fmt::Debug for Shared<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("limiter", &self.limiter)
            .field("settings", &self.settings)
            .field("waiters", &self.waiters)
            .finish_non_exhaustive()
    }
}

impl<R> Shared<R> {
    pub(super) fn new(
        limiter: Limiter,
        settings: Settings,
        priority: Priority<R>,
        clock: Clock,
    ) -> Arc<Self> {
        Arc::new(Self {
            priority,
            limiter,
            settings,
            clock,
            counts: Counts::default(),
            waiting: Mutex::new(WaitingRoom::new(settings.capacity, settings.lifo_after)),
            waiters: AtomicUsize::new(0),
            history: Mutex::new(VecDeque::new()),
        })
    }

    /// The time the limiter is told: since this layer was made.
    pub(super) fn now(&self) -> Duration {
        self.clock.elapsed()
    }

    /// `instant` as the limiter is told it.
    pub(super) fn since_epoch(&self, instant: Instant) -> Duration {
        self.clock.offset(instant)
    }

    /// Requests waiting now.
    pub(super) fn queued(&self) -> usize {
        let mut waiting = self.lock();
        waiting.retain(|tx| !tx.is_closed());
        self.waiters.store(waiting.len(), Ordering::SeqCst);
        waiting.len()
    }

    /// A lease at once if nobody waits and the limit allows; else a place in the queue (the
    /// lowest-priority waiter giving up its place if the queue is full and it ranks below).
    pub(super) fn enter(&self, priority: u8, now: Duration) -> Result<Entry, QueueFull> {
        // Nobody waiting: no queue to jump, no lock to take.
        if self.waiters.load(Ordering::SeqCst) == 0 {
            if let Some(ticket) = self.limiter.try_ticket(now) {
                return Ok(Entry::Now(ticket));
            }
        }
        let mut waiting = self.lock();
        waiting.retain(|tx| !tx.is_closed());
        let (tx, rx) = oneshot::channel();
        match waiting.enter(tx, priority, self.now()) {
            Ok(None) => {}
            Ok(Some(evicted)) => {
                let _ = evicted.send(Err(Refusal::Evicted));
            }
            Err(_) => {
                self.waiters.store(waiting.len(), Ordering::SeqCst);
                return Err(QueueFull);
            }
        }
        self.waiters.store(waiting.len(), Ordering::SeqCst);
        drop(waiting);
        // A lease may have ended between the first try and the count being published, its
        // dispatch seeing nobody: look again, now that any later one will see this waiter.
        self.dispatch();
        Ok(Entry::Wait(rx))
    }

    /// Hands the capacity there is now to the waiters, first in the queue first.
    pub(super) fn dispatch(&self) {
        if self.waiters.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut waiting = self.lock();
        let now = self.now();
        // Those whose time ran out are refused first, never started.
        let (wait, why) = expiry(self.settings.queue_timeout, self.settings.deadline);
        for expired in waiting.expire(now, wait) {
            let _ = expired.send(Err(Refusal::Expired(why)));
        }
        while !waiting.is_empty() {
            let Some(lease) = self.limiter.try_acquire(now) else {
                break;
            };
            let mut lease = Some(lease);
            while let Some(waiter) = waiting.next(now) {
                match waiter.send(Ok(lease.take().expect("a lease to give"))) {
                    Ok(()) => break,
                    // Gone: its lease comes back, for the next one.
                    Err(Ok(back)) => lease = Some(back),
                    Err(Err(_)) => unreachable!("a lease was sent"),
                }
            }
            // Nobody left to take it: it is released on drop.
            drop(lease);
        }
        self.waiters.store(waiting.len(), Ordering::SeqCst);
    }

    fn lock(&self) -> MutexGuard<'_, WaitingRoom<Waiter>> {
        lock(&self.waiting)
    }

    /// The reporting task's samples.
    pub(super) fn history(&self) -> MutexGuard<'_, VecDeque<ShedSample>> {
        lock(&self.history)
    }
}

/// Counts one refusal.
pub(super) fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
