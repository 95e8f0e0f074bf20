//! The handle: opening the store, restoring what was in force, attaching to a registry,
//! and the reads the routes serve. The task that writes is in `drive`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use status_core::{Clock, Dependency, Registry, Urgency};
use tokio::sync::{mpsc, oneshot, watch};

use crate::model::AuditRecord;
use crate::sqlite::SqliteHistory;
use crate::store::HistoryStore;
use crate::tally::Recorder;
use crate::uptime::Weights;
use crate::{Retention, Writes};

mod announce;
mod drive;
mod exclusions;
mod health;
mod incidents;
mod kept;
mod read;
mod sla;
mod slo;
mod subscribers;

/// The id of the passive dependency that says how the store fares.
pub const HISTORY_ID: &str = "history";

pub use self::announce::{
    NewAnnouncement, MAX_ANNOUNCED_DEPENDENCIES, MAX_ANNOUNCEMENT_BODY, MAX_ANNOUNCEMENT_TITLE,
};
pub use self::exclusions::NewExclusion;
pub use self::incidents::{MAX_POSTMORTEM, MAX_UPDATE_MESSAGE, OPERATOR};
pub use self::slo::{ALARMS_KEY, SLO_EVERY};

/// How a [`History`] is opened: where, how often it writes, how much it holds back.
#[derive(Debug, Clone)]
pub struct HistoryBuilder {
    store: Arc<dyn HistoryStore>,
    flush_every: Duration,
    aggregate_every: Duration,
    backlog: usize,
    retention: Retention,
    weights: Weights,
    incident_quiet: Duration,
    objectives: Vec<crate::objective::Objective>,
}

impl HistoryBuilder {
    /// Writes every `every` (1 s): transitions, audit records, mutes and overrides are
    /// durable within it.
    #[must_use]
    pub fn flush_every(mut self, every: Duration) -> Self {
        self.flush_every = every.max(Duration::from_millis(10));
        self
    }

    /// Writes the time in each level every `every` (1 s, as the transitions): what a kill
    /// loses of it. Reads include what is not written yet whatever it is.
    #[must_use]
    pub fn aggregate_every(mut self, every: Duration) -> Self {
        self.aggregate_every = every.max(Duration::from_millis(10));
        self
    }

    /// Holds at most `rows` rows back while the store fails (100,000); past it the oldest
    /// transitions and audit records are dropped, and counted.
    #[must_use]
    pub fn backlog(mut self, rows: usize) -> Self {
        self.backlog = rows.max(1);
        self
    }

    /// Keeps records as long as `retention` says.
    #[must_use]
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Resolves an incident once everything it covers has been healthy for `quiet` (5
    /// minutes); a failure within `quiet` after that reopens it.
    #[must_use]
    pub fn incident_quiet(mut self, quiet: Duration) -> Self {
        self.incident_quiet = quiet;
        self
    }

    /// Weighs the SLA as `weights` say.
    #[must_use]
    pub fn weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// Declares service level objectives ([`objective`](crate::objective)): reported by
    /// [`History::slos`], their alerts read every 15 s once attached and broadcast to
    /// [`History::alarms`]. One per name: a later one replaces an earlier one of the same
    /// name. Check their targets against the registry with
    /// [`objective::check`](crate::objective::check).
    #[must_use]
    pub fn objectives(
        mut self,
        objectives: impl IntoIterator<Item = crate::objective::Objective>,
    ) -> Self {
        self.objectives = slo::by_name(self.objectives.into_iter().chain(objectives));
        self
    }

    /// The history, ready to [attach](History::attach). Its store is opened (created,
    /// migrated, a corrupt file moved aside) by the task `attach` starts; a store that
    /// cannot be opened is tried again every ten seconds, and said by the `history`
    /// dependency meanwhile: opening never fails the application.
    #[must_use]
    pub fn open(self) -> History {
        let (tx, rx) = mpsc::channel(1024);
        History {
            shared: Arc::new(Shared {
                slos: slo::Slos::new(self.objectives.clone()),
                excluded: Mutex::default(),
                builder: self,
                tx,
                rx: Mutex::new(Some(rx)),
                clock: OnceLock::new(),
                stats: Stats::default(),
                restored: watch::channel(None).0,
                flushed: watch::channel(0).0,
                ledger: Mutex::default(),
                commit: tokio::sync::RwLock::new(()),
            }),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) written: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) failures: AtomicU64,
    pub(crate) backlog: AtomicU64,
}

/// What the store has done since the start: what `/metrics` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HistoryStats {
    /// Rows written.
    pub written: u64,
    /// Events and rows dropped: a full queue, a lagging event stream, a backlog past
    /// its bound.
    pub dropped: u64,
    /// Writes that failed (each retried with the next).
    pub failures: u64,
    /// Rows waiting to be written.
    pub backlog: u64,
}

pub(crate) enum Msg {
    Audit(AuditRecord),
    State(String, String),
    Flush(oneshot::Sender<()>),
    Close(oneshot::Sender<()>),
}

pub(crate) struct Shared {
    pub(crate) builder: HistoryBuilder,
    /// The objectives and their alarms.
    pub(crate) slos: slo::Slos,
    /// The exclusions as last read.
    pub(crate) excluded: Mutex<exclusions::Excluded>,
    pub(crate) tx: mpsc::Sender<Msg>,
    rx: Mutex<Option<mpsc::Receiver<Msg>>>,
    pub(crate) clock: OnceLock<Clock>,
    pub(crate) stats: Stats,
    /// What the first open restored, once it did.
    pub(crate) restored: watch::Sender<Option<Restored>>,
    /// Counts the driver's writes (tried), so that a reader can wait for the next.
    pub(crate) flushed: watch::Sender<u64>,
    /// What is recorded and not yet written.
    pub(crate) ledger: Mutex<Ledger>,
    /// Held by a write while it commits, by a read while it adds the store's figures and
    /// the ledger's: a read never counts a write twice, nor misses one.
    pub(crate) commit: tokio::sync::RwLock<()>,
}

/// What the driver has recorded and not yet written: the recorder's running account and
/// the writes held back (a failed write, kept for the next). Reads add it to the store's.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) recorder: Recorder,
    pub(crate) pending: Writes,
}

/// Counts a flush once it is over, whichever way it ended.
pub(crate) struct Flushed(pub(crate) Arc<Shared>);

impl Drop for Flushed {
    fn drop(&mut self) {
        self.0.flushed.send_modify(|n| *n += 1);
    }
}

impl Shared {
    pub(crate) fn store(&self) -> &dyn HistoryStore {
        &*self.builder.store
    }

    /// The ledger, for a moment (never across an await).
    pub(crate) fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        crate::sync::lock(&self.ledger)
    }
}

/// Durable history: the store, and once [attached](Self::attach) to a registry, the task
/// that records it. Cheap to clone: clones share it.
#[derive(Clone)]
pub struct History {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("History")
            .field("store", &self.shared.builder.store)
            .finish_non_exhaustive()
    }
}

/// What [`History::attach`] put back in force.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Restored {
    /// Mutes and maintenance windows restored.
    pub mutes: usize,
    /// Feature overrides restored.
    pub overrides: usize,
    /// What could not be restored, and why (an unknown dependency or feature).
    pub skipped: Vec<String>,
}

impl History {
    /// A history kept in the SQLite file at `path` (created if missing).
    pub fn sqlite(path: impl Into<PathBuf>) -> HistoryBuilder {
        Self::builder(SqliteHistory::file(path))
    }

    /// A history kept in memory: for tests and demos, gone at exit.
    #[must_use]
    pub fn in_memory() -> HistoryBuilder {
        Self::builder(SqliteHistory::in_memory())
    }

    /// A history kept in `store`: SQLite, PostgreSQL (`PostgresHistory`, feature
    /// `postgres`), or one of your own.
    pub fn builder(store: impl HistoryStore) -> HistoryBuilder {
        HistoryBuilder {
            store: Arc::new(store),
            flush_every: Duration::from_secs(1),
            aggregate_every: Duration::from_secs(1),
            backlog: 100_000,
            retention: Retention::default(),
            weights: Weights::DEFAULT,
            incident_quiet: crate::incident::DEFAULT_QUIET,
            objectives: Vec::new(),
        }
    }

    /// Starts recording `registry` on the current Tokio runtime until the registry is
    /// dropped, registers the passive dependency `history` (urgency None), and, once the
    /// store is open, puts back the mutes and overrides still in force
    /// ([`restored`](Self::restored) tells what). Call it once, after the dependencies and
    /// features are registered (what is unknown cannot be restored, and is said so).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, or when called twice.
    pub fn attach(&self, registry: &Registry) {
        let rx = self
            .shared
            .rx
            .lock()
            .ok()
            .and_then(|mut rx| rx.take())
            .expect("History::attach is called once");
        let _ = self.shared.clock.set(registry.clock().clone());
        let reporter = registry
            .add_passive(
                Dependency::passive(HISTORY_ID)
                    .urgency(Urgency::None)
                    .kind("history")
                    .description("The history store: time in each level, transitions, audit, mutes and overrides, kept across restarts")
                    .build_info()
                    .expect("a valid dependency"),
            )
            .map_err(|e| tracing::warn!("the history store is not reported as a dependency: {e}"))
            .ok();
        slo::start(self, registry.downgrade());
        tokio::spawn(drive::run(
            self.shared.clone(),
            registry.downgrade(),
            registry.subscribe(),
            rx,
            reporter,
        ));
    }

    /// What the first open of the store put back in force, once it has (at once for a
    /// file; when a database first answers). The restore happens whether this is awaited or
    /// not, and a store that does not open (a file another process holds, a directory that
    /// cannot be written, a database down) keeps it waiting until it does: never await it
    /// before binding the port, or the probes wait with it.
    pub async fn restored(&self) -> Restored {
        let mut rx = self.shared.restored.subscribe();
        let restored = match rx.wait_for(Option::is_some).await {
            Ok(restored) => restored.clone().unwrap_or_default(),
            Err(_) => Restored::default(),
        };
        restored
    }

    /// Records an audit record, durable within a second. Never waits: a full queue drops
    /// it, and counts it.
    pub fn record_audit(&self, record: AuditRecord) {
        self.send(Msg::Audit(record));
    }

    /// Keeps `value` (JSON) under `key`, durable within a second (the notifier's
    /// last-told). Never waits.
    pub fn put_state(&self, key: impl Into<String>, value: impl Into<String>) {
        self.send(Msg::State(key.into(), value.into()));
    }

    fn send(&self, msg: Msg) {
        if self.shared.tx.try_send(msg).is_err() {
            self.shared.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The state kept under `key` ([`put_state`](Self::put_state)) by the last run, once
    /// the store has opened (waiting for it at most `patience`); `None` if there is none,
    /// or the store did not open in time.
    pub async fn state(&self, key: &str, patience: Duration) -> Option<String> {
        let mut rx = self.shared.restored.subscribe();
        tokio::time::timeout(patience, rx.wait_for(Option::is_some))
            .await
            .ok()?
            .ok()?;
        self.shared.store().state(key).await.ok().flatten()
    }

    /// Writes everything recorded so far now, and waits for it (at shutdown, in tests).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.shared.tx.send(Msg::Flush(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// Writes everything recorded so far, then closes the store (its file's lock, its
    /// connection) and stops recording: the one call to make at shutdown, after the server
    /// has stopped. Dropping the registry does the same by itself.
    pub async fn close(&self) {
        let (tx, rx) = oneshot::channel();
        if self.shared.tx.send(Msg::Close(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// What the store has done since the start.
    #[must_use]
    pub fn stats(&self) -> HistoryStats {
        let s = &self.shared.stats;
        HistoryStats {
            written: s.written.load(Ordering::Relaxed),
            dropped: s.dropped.load(Ordering::Relaxed),
            failures: s.failures.load(Ordering::Relaxed),
            backlog: s.backlog.load(Ordering::Relaxed),
        }
    }

    /// The weights of the SLA.
    #[must_use]
    pub fn weights(&self) -> Weights {
        self.shared.builder.weights
    }

    /// Now, on the attached registry's clock (the wall clock before).
    #[must_use]
    pub fn now(&self) -> DateTime<Utc> {
        self.shared.clock.get().map_or_else(Utc::now, Clock::wall)
    }
}
