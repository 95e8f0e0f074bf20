//! The handle: opening the store, restoring what was in force, attaching to a registry,
//! and the reads the routes serve. The task that writes is in `drive`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Datelike, TimeZone, Utc};
use status_core::{Clock, Dependency, FeatureOverride, MuteWindow, Registry, Urgency};
use tokio::sync::{mpsc, oneshot};

use crate::model::{AuditRecord, Series, Tier, TransitionRecord};
use crate::sqlite::SqliteStore;
use crate::uptime::{DayTile, UptimeReport, Weights, Window, WindowError};
use crate::{Retention, StoreError};

mod drive;

/// The id of the passive dependency that says how the store fares.
pub const HISTORY_ID: &str = "history";

/// How a [`History`] is opened: where, how often it writes, how much it holds back.
#[derive(Debug, Clone)]
pub struct HistoryBuilder {
    path: Option<PathBuf>,
    flush_every: Duration,
    aggregate_every: Duration,
    backlog: usize,
    retention: Retention,
    weights: Weights,
}

impl HistoryBuilder {
    /// Writes every `every` (1 s): transitions, audit records, mutes and overrides are
    /// durable within it.
    #[must_use]
    pub fn flush_every(mut self, every: Duration) -> Self {
        self.flush_every = every.max(Duration::from_millis(10));
        self
    }

    /// Writes the minute buckets every `every` (10 s): what a kill loses of them.
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

    /// Weighs the SLA as `weights` say.
    #[must_use]
    pub fn weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// Opens the store (creating, migrating, or moving a corrupt file aside). A store that
    /// cannot be opened is tried again every ten seconds once attached, and said by the
    /// `history` dependency meanwhile: opening never fails the application.
    #[must_use]
    pub fn open(self) -> History {
        let now = Utc::now().timestamp_millis();
        let opened = match &self.path {
            Some(path) => SqliteStore::open(path, now),
            None => SqliteStore::in_memory(now).map(|store| crate::sqlite::Opened {
                store,
                moved_aside: None,
            }),
        };
        let (store, problem, moved_aside) = match opened {
            Ok(o) => (Some(o.store), None, o.moved_aside),
            Err(e) => {
                tracing::error!(
                    path = ?self.path,
                    "the history store cannot be opened: {e}; tried again every 10 s"
                );
                (None, Some(e), None)
            }
        };
        let (tx, rx) = mpsc::channel(1024);
        History {
            shared: Arc::new(Shared {
                store: Arc::new(Mutex::new(store)),
                builder: self,
                tx,
                rx: Mutex::new(Some(rx)),
                clock: OnceLock::new(),
                stats: Stats::default(),
                opened: Mutex::new(Opening {
                    problem,
                    moved_aside,
                }),
            }),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Opening {
    pub(crate) problem: Option<StoreError>,
    pub(crate) moved_aside: Option<PathBuf>,
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
}

pub(crate) struct Shared {
    pub(crate) store: Arc<Mutex<Option<SqliteStore>>>,
    pub(crate) builder: HistoryBuilder,
    pub(crate) tx: mpsc::Sender<Msg>,
    rx: Mutex<Option<mpsc::Receiver<Msg>>>,
    pub(crate) clock: OnceLock<Clock>,
    pub(crate) stats: Stats,
    pub(crate) opened: Mutex<Opening>,
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
            .field("path", &self.shared.builder.path)
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

/// Why a read was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// The window asked for is not one (a 400).
    Window(WindowError),
    /// The store is not available (a 503).
    Store(String),
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Window(e) => e.fmt(f),
            Self::Store(e) => write!(f, "the history store is not available: {e}"),
        }
    }
}

impl std::error::Error for QueryError {}

impl History {
    /// A history kept in the SQLite file at `path` (created if missing).
    pub fn sqlite(path: impl Into<PathBuf>) -> HistoryBuilder {
        Self::builder(Some(path.into()))
    }

    /// A history kept in memory: for tests and demos, gone at exit.
    #[must_use]
    pub fn in_memory() -> HistoryBuilder {
        Self::builder(None)
    }

    fn builder(path: Option<PathBuf>) -> HistoryBuilder {
        HistoryBuilder {
            path,
            flush_every: Duration::from_secs(1),
            aggregate_every: Duration::from_secs(10),
            backlog: 100_000,
            retention: Retention::default(),
            weights: Weights::DEFAULT,
        }
    }

    /// Puts back the mutes and overrides still in force, registers the passive dependency
    /// `history` (urgency None), and starts recording `registry` on the current Tokio
    /// runtime until the registry is dropped. Call it once, after the dependencies and
    /// features are registered (what is unknown cannot be restored, and is said so).
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, or when called twice.
    pub fn attach(&self, registry: &Registry) -> Restored {
        let rx = self
            .shared
            .rx
            .lock()
            .ok()
            .and_then(|mut rx| rx.take())
            .expect("History::attach is called once");
        let _ = self.shared.clock.set(registry.clock().clone());
        let restored = self.restore(registry);
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
        tokio::spawn(drive::run(
            self.shared.clone(),
            registry.downgrade(),
            registry.subscribe(),
            rx,
            reporter,
        ));
        restored
    }

    fn restore(&self, registry: &Registry) -> Restored {
        let mut restored = Restored::default();
        let (mutes, overrides) = {
            let store = self.shared.store.lock().ok();
            let Some(store) = store.as_ref().and_then(|s| s.as_ref()) else {
                return restored;
            };
            (
                store.mutes().unwrap_or_default(),
                store.overrides().unwrap_or_default(),
            )
        };
        let now = registry.clock().wall();
        for m in mutes.into_iter().filter(|m| m.until > now) {
            let window = MuteWindow::Between {
                start: m.start,
                end: m.until,
            };
            match registry.mute(&m.dependency, window, &m.reason, m.actor.as_deref()) {
                Ok(_) => restored.mutes += 1,
                Err(e) => restored
                    .skipped
                    .push(format!("the mute of {}: {e}", m.dependency)),
            }
        }
        for o in overrides.into_iter().filter(|o| o.expires_at > now) {
            let ttl = (o.expires_at - now).to_std().unwrap_or_default();
            let over = FeatureOverride::new(o.enabled, ttl.max(Duration::from_secs(1)), &o.reason)
                .map(|over| match &o.actor {
                    Some(actor) => over.actor(actor),
                    None => over,
                });
            match over.and_then(|over| registry.override_feature(&o.feature, &over)) {
                Ok(_) => restored.overrides += 1,
                Err(e) => restored
                    .skipped
                    .push(format!("the override of {}: {e}", o.feature)),
            }
        }
        for skipped in &restored.skipped {
            tracing::warn!("not restored from the history: {skipped}");
        }
        if restored.mutes + restored.overrides > 0 {
            tracing::info!(
                mutes = restored.mutes,
                overrides = restored.overrides,
                "restored from the history"
            );
        }
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

    /// The state kept under `key` ([`put_state`](Self::put_state)), as written by the last
    /// run; `None` if none, or the store is not open. Reads the store: call it at start,
    /// not on a hot path.
    #[must_use]
    pub fn state(&self, key: &str) -> Option<String> {
        let store = self.shared.store.lock().ok()?;
        store.as_ref()?.state(key).ok().flatten()
    }

    /// Writes everything recorded so far now, and waits for it (at shutdown, in tests).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.shared.tx.send(Msg::Flush(tx)).await.is_ok() {
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

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&SqliteStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, QueryError> {
        let store = self.shared.store.clone();
        tokio::task::spawn_blocking(move || {
            let guard = store
                .lock()
                .map_err(|_| QueryError::Store("poisoned".into()))?;
            let store = guard
                .as_ref()
                .ok_or_else(|| QueryError::Store("not open".into()))?;
            f(store).map_err(|e| QueryError::Store(e.to_string()))
        })
        .await
        .map_err(|e| QueryError::Store(e.to_string()))?
    }

    /// Time in each level, uptime and SLA of `series` from `from` to `to`, read from the
    /// finest tier still kept at `from` (the window widened to its buckets). What was
    /// recorded in the last ten seconds may not be in it yet.
    ///
    /// # Errors
    ///
    /// [`QueryError::Window`] for a window that is not one; [`QueryError::Store`] when the
    /// store fails.
    pub async fn uptime(
        &self,
        series: Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<UptimeReport, QueryError> {
        let window = Window::new(from, to, self.now(), &self.shared.builder.retention)
            .map_err(QueryError::Window)?;
        let weights = self.weights();
        self.read(move |store| {
            let buckets = store.buckets(
                &series,
                window.tier,
                window.from.timestamp(),
                window.to.timestamp(),
            )?;
            Ok(UptimeReport::of(series, window, &buckets, weights))
        })
        .await
    }

    /// The last `days` days of `series` (today included), oldest first, one tile a day
    /// (days with nothing observed included).
    ///
    /// # Errors
    ///
    /// [`QueryError::Store`] when the store fails.
    pub async fn days(&self, series: Series, days: u32) -> Result<Vec<DayTile>, QueryError> {
        let today = Tier::Day.floor(self.now());
        let first = today - chrono::Duration::days(i64::from(days.max(1)) - 1);
        self.read(move |store| {
            let buckets = store.buckets(
                &series,
                Tier::Day,
                first.timestamp(),
                (today + Tier::Day.length()).timestamp(),
            )?;
            let mut tiles = Vec::with_capacity(days as usize);
            let mut day = first;
            let mut kept = buckets.iter().peekable();
            while day <= today {
                let tile = match kept.peek() {
                    Some(b) if b.start == day.timestamp() => {
                        DayTile::of(kept.next().unwrap_or_else(|| unreachable!()))
                    }
                    _ => DayTile::of(&crate::model::Bucket::empty(day.timestamp())),
                };
                tiles.push(tile);
                day += Tier::Day.length();
            }
            Ok(tiles)
        })
        .await
    }

    /// The latest `limit` transitions of `series`, oldest first.
    ///
    /// # Errors
    ///
    /// [`QueryError::Store`] when the store fails.
    pub async fn transitions(
        &self,
        series: Series,
        limit: usize,
    ) -> Result<Vec<TransitionRecord>, QueryError> {
        self.read(move |store| store.transitions(&series, i64::MIN, i64::MAX, limit))
            .await
    }

    /// The latest `limit` audit records before the record `before`, newest first, with
    /// their ids (to page on).
    ///
    /// # Errors
    ///
    /// [`QueryError::Store`] when the store fails.
    pub async fn audit(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, AuditRecord)>, QueryError> {
        self.read(move |store| store.audit(before, limit)).await
    }

    /// The calendar month `year`-`month` (UTC) of the system, every group and every
    /// dependency kept, from day buckets.
    ///
    /// # Errors
    ///
    /// [`QueryError::Window`] for a month that does not exist, is in the future or is
    /// older than the days kept; [`QueryError::Store`] when the store fails.
    pub async fn month(&self, year: i32, month: u32) -> Result<Vec<UptimeReport>, QueryError> {
        let bad = |m: &str| QueryError::Window(WindowError(m.into()));
        let from = Utc
            .with_ymd_and_hms(year, month, 1, 0, 0, 0)
            .single()
            .ok_or_else(|| bad("no such month: give it as YYYY-MM"))?;
        let (ny, nm) = if from.month() == 12 {
            (year + 1, 1)
        } else {
            (year, month + 1)
        };
        let to = Utc
            .with_ymd_and_hms(ny, nm, 1, 0, 0, 0)
            .single()
            .ok_or_else(|| bad("no such month"))?;
        let now = self.now();
        let retention = self.shared.builder.retention.clone();
        let age = now - from;
        if age > chrono::Duration::from_std(retention.days).unwrap_or(chrono::Duration::MAX) {
            return Err(bad("the month is older than the days kept"));
        }
        if from > now {
            return Err(bad("the month has not begun"));
        }
        let window = Window {
            from,
            to,
            tier: Tier::Day,
        };
        let weights = self.weights();
        self.read(move |store| {
            let mut all = vec![Series::System];
            all.extend(store.series("group")?);
            all.extend(store.series("dependency")?);
            all.into_iter()
                .map(|series| {
                    let buckets =
                        store.buckets(&series, Tier::Day, from.timestamp(), to.timestamp())?;
                    Ok(UptimeReport::of(series, window, &buckets, weights))
                })
                .collect()
        })
        .await
    }
}
