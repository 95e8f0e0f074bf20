//! The task that records: it turns the registry's events into the recorder's calls, asks
//! it for a batch every second, and writes the batch through the store, one at a time.
//! What fails to be written is kept (bounded) and written with the next.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use status_core::check::CheckOutcome;
use status_core::{Event, HoldSource, Registry, Reporter, RunOutcome, WeakRegistry};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

mod intake;
mod share;

use super::health::health;
use super::{kept, Flushed, Msg, Restored, Shared};
use crate::incident::IncidentTracker;
use crate::model::Series;
use crate::Writes;

/// How often a store that could not be opened is tried again.
const REOPEN_EVERY: Duration = Duration::from_secs(10);
/// How often a store another process holds is tried again: one shutting down lets go soon.
const RELOCK_EVERY: Duration = Duration::from_secs(1);
/// How often old records are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

struct Driver {
    shared: Arc<Shared>,
    registry: WeakRegistry,
    incidents: IncidentTracker,
    holds: Vec<(HoldSource, String)>,
    /// Holds released by someone since the last change of holds: whose, and who.
    released: Vec<(HoldSource, Option<String>)>,
    failing_since: Option<(Instant, String)>,
    dropped_at: Option<Instant>,
    last_open: Option<Instant>,
    last_prune: Option<Instant>,
    last_aggregates: Option<Instant>,
    /// Whether what the last run left in force was put back.
    restored: bool,
    /// Why the store did not open, while it does not.
    open_error: Option<String>,
    /// Whether it did not open because another process holds it.
    locked: bool,
    /// The registry's mutes as last kept: one gone before its end is told to the fleet.
    mutes: Vec<crate::model::MuteRecord>,
    /// When the fleet's acts were last read.
    last_share: Option<Instant>,
}

pub(super) async fn run(
    shared: Arc<Shared>,
    registry: WeakRegistry,
    mut events: broadcast::Receiver<Event>,
    mut rx: mpsc::Receiver<Msg>,
    reporter: Option<Reporter>,
) {
    let Some(clock) = shared.clock.get().cloned() else {
        return;
    };
    let incidents = IncidentTracker::new(shared.builder.incident_quiet);
    let mut d = Driver {
        shared,
        registry,
        incidents,
        holds: Vec::new(),
        released: Vec::new(),
        failing_since: None,
        dropped_at: None,
        last_open: None,
        last_prune: None,
        last_aggregates: None,
        restored: false,
        open_error: None,
        locked: false,
        mutes: Vec::new(),
        last_share: None,
    };
    // Open (and restore) before anything is written: the mutes in force come back first.
    d.open().await;
    d.seed();
    let every = d.shared.builder.flush_every;
    let mut next = clock.now() + every;
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => d.on_event(&event),
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(lost = n, "the history fell behind the registry's events: some were not recorded");
                    d.dropped(n);
                }
                Err(RecvError::Closed) => break,
            },
            msg = rx.recv() => match msg {
                Some(Msg::Audit(record)) => d.shared.ledger().pending.audit.push(record),
                Some(Msg::State(key, value)) => {
                    let mut ledger = d.shared.ledger();
                    ledger.pending.state.retain(|(k, _)| *k != key);
                    ledger.pending.state.push((key, value));
                }
                Some(Msg::Flush(done)) => {
                    // Everything the registry said before the flush was asked goes in it.
                    d.drain(&mut events);
                    d.flush(true).await;
                    let _ = done.send(());
                }
                Some(Msg::Close(done)) => {
                    d.drain(&mut events);
                    d.flush(true).await;
                    d.close().await;
                    let _ = done.send(());
                    return;
                }
                None => break,
            },
            () = tokio::time::sleep_until(next) => {
                let aggregates = d
                    .last_aggregates
                    .is_none_or(|at| at.elapsed() >= d.shared.builder.aggregate_every);
                d.flush(aggregates).await;
                if d.share_due() {
                    d.share().await;
                }
                if let Some(reporter) = &reporter {
                    reporter.record(d.health());
                }
                next = clock.now() + every;
            }
        }
    }
    // The registry is gone: write what is left, and let the store go.
    d.flush(true).await;
    d.close().await;
}

fn ms(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp_millis()
}

impl Driver {
    fn wall(&self) -> i64 {
        self.shared
            .clock
            .get()
            .map_or_else(|| chrono::Utc::now().timestamp_millis(), |c| ms(c.wall()))
    }

    /// Asks the recorder for a batch and writes it with whatever failed before. Reads wait
    /// while it does: what it takes out of the ledger is in neither the ledger nor the
    /// store until the write is over.
    async fn flush(&mut self, aggregates: bool) {
        let shared = Arc::clone(&self.shared);
        let _commit = shared.commit.write().await;
        let now = self.wall();
        if let Some(registry) = self.registry.upgrade() {
            self.observe(&registry, now);
            let facts = self
                .incidents
                .observe(now, &super::incidents::scene(&registry.facts()));
            let mut ledger = self.shared.ledger();
            ledger.pending.incidents.extend(facts);
            ledger.pending.incident_quiet = self.incidents.quiet_ms();
            ledger.pending.now = now;
        }
        if aggregates {
            self.last_aggregates = Some(Instant::now());
        }
        let _flushed = Flushed(Arc::clone(&self.shared));
        let mut writes = {
            let mut ledger = self.shared.ledger();
            let batch = ledger.recorder.flush(now, aggregates);
            let mut writes = std::mem::take(&mut ledger.pending);
            writes.batch.absorb(batch);
            writes
        };
        self.bound(&mut writes);
        let rows = writes.rows() as u64;
        if !self.shared.store().is_open() {
            self.open().await;
        }
        let written = if !self.shared.store().is_open() {
            Err(format!(
                "cannot open the {} store: {}",
                self.shared.store().kind(),
                self.open_error.as_deref().unwrap_or("not open")
            ))
        } else if writes.is_empty() {
            Ok(())
        } else {
            self.shared
                .store()
                .write(&writes)
                .await
                .map_err(|e| e.to_string())
        };
        match written {
            Ok(()) => {
                if rows > 0 {
                    self.shared.stats.written.fetch_add(rows, Ordering::Relaxed);
                }
                if let Some((since, _)) = self.failing_since.take() {
                    tracing::info!(after = ?since.elapsed(), "the history store writes again");
                }
                self.shared.stats.backlog.store(0, Ordering::Relaxed);
                if self.last_prune.is_none_or(|at| at.elapsed() >= PRUNE_EVERY) {
                    self.last_prune = Some(Instant::now());
                    match self
                        .shared
                        .store()
                        .prune(crate::model::millis(now), &self.shared.builder.retention)
                        .await
                    {
                        Ok(n) if n > 0 => tracing::debug!(rows = n, "history pruned"),
                        Ok(_) => {}
                        Err(e) => tracing::warn!("the history could not be pruned: {e}"),
                    }
                }
            }
            Err(e) => {
                self.shared.stats.failures.fetch_add(1, Ordering::Relaxed);
                if self.failing_since.is_none() {
                    tracing::error!(
                        "the history store fails to write: {e}; rows are kept and retried"
                    );
                }
                let since = self
                    .failing_since
                    .as_ref()
                    .map_or_else(Instant::now, |(s, _)| *s);
                self.failing_since = Some((since, e));
                self.shared
                    .stats
                    .backlog
                    .store(writes.rows() as u64, Ordering::Relaxed);
                // Kept, with what comes next written after it.
                let mut ledger = self.shared.ledger();
                let later = std::mem::replace(&mut ledger.pending, writes);
                ledger.pending.absorb(later);
            }
        }
    }

    /// Opens the store if it is time to try (at start, then every ten seconds while it
    /// fails); the first time it opens, puts back what the last run left in force.
    async fn open(&mut self) {
        let every = if self.locked {
            RELOCK_EVERY
        } else {
            REOPEN_EVERY
        };
        if self.last_open.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        self.last_open = Some(Instant::now());
        let store = self.shared.store();
        match store.open(crate::model::millis(self.wall())).await {
            Ok(()) => {
                self.locked = false;
                if self.open_error.take().is_some() {
                    tracing::info!(store = store.kind(), "the history store is open again");
                }
                if !self.restored {
                    self.restored = true;
                    super::incidents::restore(store, &mut self.incidents).await;
                    let restored = match self.registry.upgrade() {
                        Some(registry) => kept::restore(store, &registry).await,
                        None => Restored::default(),
                    };
                    self.shared.restored.send_replace(Some(restored));
                }
            }
            Err(e) => {
                if self.open_error.is_none() {
                    let every = if e.is_locked() {
                        RELOCK_EVERY
                    } else {
                        REOPEN_EVERY
                    };
                    tracing::error!(
                        store = store.kind(),
                        "the history store cannot be opened: {e}; tried again every {} s",
                        every.as_secs()
                    );
                }
                self.locked = e.is_locked();
                self.open_error = Some(e.to_string());
            }
        }
    }

    /// Closes the store: nothing more is written by this process.
    async fn close(&mut self) {
        if let Err(e) = self.shared.store().close().await {
            tracing::warn!("the history store did not close cleanly: {e}");
        }
    }

    /// Drops the oldest rows past the backlog's bound, and counts them.
    fn bound(&mut self, writes: &mut Writes) {
        let lost = writes.bound(self.shared.builder.backlog);
        if lost > 0 {
            tracing::warn!(
                lost,
                "the history backlog is full: the oldest rows were dropped"
            );
            self.dropped(lost);
        }
    }

    /// What the `history` dependency says now.
    fn health(&self) -> CheckOutcome {
        health(
            &self.shared.stats,
            self.failing_since.as_ref(),
            self.shared.store().note(),
            self.dropped_at,
        )
    }
}
