//! The registry and its engine: scheduling, caching, hysteresis, staleness, features.

mod builder;
mod entry;
mod features;
mod graph;
mod hysteresis;
mod run;
mod schedule;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::broadcast;
use tokio::task::AbortHandle;
use tokio::time::Instant;

pub use self::builder::RegistryBuilder;
pub(crate) use self::entry::lock;
use self::entry::{Entry, EntryConfig, RunFuture};
pub use self::run::{Outcome, TIMED_OUT};
use self::schedule::{schedule, watch, Jitter};
use crate::event::{Event, Listener, ListenerSlot};
use crate::feature::{self, FeatureEntry, FeatureUpdate};
use crate::history::HistorySnapshot;
use crate::{
    CheckResult, CheckStatus, Clock, Dependency, DependencyId, DependencyInfo, DrainState, Error,
    Requirement, SystemReport,
};

/// The registry of an application's dependencies and features, and the engine that checks
/// them. Cheap to clone; every clone is the same registry.
///
/// Each dependency is checked in the background, once when added and then every period
/// (with jitter); reads such as [`report`](Self::report) only read cached results. Dropping
/// the last clone stops every check.
///
/// # Example
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), status_core::Error> {
/// use status_core::{check, CheckStatus, Dependency, Feature, Registry, Urgency};
///
/// let registry = Registry::new();
/// registry.add(
///     Dependency::builder("cache", check::ping(|| async { Ok::<_, std::io::Error>(()) }))
///         .urgency(Urgency::Weak)
///         .build()?,
/// )?;
/// let cached_pages = registry.add_feature(
///     Feature::builder("cached-pages").requires("cache", CheckStatus::Minor).build()?,
/// )?;
///
/// let report = registry.refresh_all().await;
/// assert_eq!(report.condition, CheckStatus::Ok);
/// assert!(cached_pages.is_enabled());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

pub(crate) struct Config {
    pub(crate) hostname: String,
    pub(crate) appname: String,
    pub(crate) jitter: f64,
    pub(crate) entry: EntryConfig,
    pub(crate) transitions_kept: usize,
    pub(crate) watchdog_interval: Duration,
    pub(crate) report_max_age: Duration,
}

struct Inner {
    clock: Clock,
    config: Config,
    entries: RwLock<HashMap<DependencyId, Arc<Entry>>>,
    features: RwLock<BTreeMap<DependencyId, Arc<FeatureEntry>>>,
    /// Bumped when what a report shows changes beyond timestamps: a status, staleness,
    /// flapping, the set of dependencies.
    status_gen: AtomicU64,
    /// Bumped by every check.
    check_gen: AtomicU64,
    cache: RwLock<Option<Arc<Cached>>>,
    rebuilding: Mutex<()>,
    evaluating_features: Mutex<()>,
    events: broadcast::Sender<Event>,
    listeners: RwLock<Vec<ListenerSlot>>,
    watchdog: Mutex<Option<AbortHandle>>,
    drain: Mutex<Option<DrainState>>,
    jitter_seed: u64,
}

struct Cached {
    report: Arc<SystemReport>,
    status_gen: u64,
    check_gen: u64,
    built_at: Instant,
    valid_until: Instant,
}

impl Registry {
    /// A registry with the default settings; see [`Registry::builder`] for the others.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts configuring a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    fn from_parts(clock: Clock, config: Config, event_capacity: usize) -> Self {
        let (events, _) = broadcast::channel(event_capacity.max(1));
        let jitter_seed = {
            use std::hash::{BuildHasher, RandomState};
            RandomState::new().hash_one("status-jitter")
        };
        Self {
            inner: Arc::new(Inner {
                clock,
                config,
                entries: RwLock::new(HashMap::new()),
                features: RwLock::new(BTreeMap::new()),
                status_gen: AtomicU64::new(0),
                check_gen: AtomicU64::new(0),
                cache: RwLock::new(None),
                rebuilding: Mutex::new(()),
                evaluating_features: Mutex::new(()),
                events,
                listeners: RwLock::new(Vec::new()),
                watchdog: Mutex::new(None),
                drain: Mutex::new(None),
                jitter_seed,
            }),
        }
    }

    /// The clock the registry reads.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The host name reports carry.
    #[must_use]
    pub fn hostname(&self) -> &str {
        &self.inner.config.hostname
    }

    /// The application name reports carry.
    #[must_use]
    pub fn appname(&self) -> &str {
        &self.inner.config.appname
    }

    /// Registers `dependency` and starts checking it: once now, then every period.
    ///
    /// # Errors
    ///
    /// [`Error::is_duplicate`] if its id is taken; [`Error::is_cycle`] if its parents lead
    /// back to it; [`Error::is_no_runtime`] outside a Tokio runtime. Nothing changes on error.
    pub fn add(&self, dependency: Dependency) -> Result<(), Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::no_runtime())?;
        let inner = &self.inner;
        let id = dependency.info.id.clone();
        let entry = {
            let mut entries = write(&inner.entries);
            if entries.contains_key(&id) {
                return Err(Error::duplicate("dependency", id.as_str()));
            }
            if graph::reaches(&entries, &dependency.info.parents, &id) {
                return Err(Error::cycle(id.as_str()));
            }
            let entry = Arc::new(Entry::new(
                dependency,
                inner.clock.now(),
                inner.clock.wall(),
                inner.config.transitions_kept,
            ));
            entries.insert(id, Arc::clone(&entry));
            entry
        };
        inner.status_gen.fetch_add(1, Ordering::AcqRel);
        inner.emit(&Event::Added(Arc::clone(&entry.dep.info)));
        inner.start_scheduler(&runtime, &entry);
        inner.ensure_watchdog(&runtime);
        inner.reevaluate_features();
        Ok(())
    }

    /// Unregisters the dependency `id` and stops checking it.
    ///
    /// Features requiring it turn off (a requirement on a dependency that is not registered
    /// is not met).
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such dependency is registered.
    pub fn remove(&self, id: &str) -> Result<(), Error> {
        let inner = &self.inner;
        let entry = write(&inner.entries)
            .remove(id)
            .ok_or_else(|| Error::unknown_dependency(id))?;
        entry.stop();
        inner.status_gen.fetch_add(1, Ordering::AcqRel);
        inner.emit(&Event::Removed(entry.info().id.clone()));
        inner.reevaluate_features();
        Ok(())
    }

    /// Whether a dependency `id` is registered.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        read(&self.inner.entries).contains_key(id)
    }

    /// The registered dependencies, sorted by id.
    #[must_use]
    pub fn dependencies(&self) -> Vec<Arc<DependencyInfo>> {
        let mut infos: Vec<_> = read(&self.inner.entries)
            .values()
            .map(|e| Arc::clone(&e.dep.info))
            .collect();
        infos.sort_by(|a, b| a.id.cmp(&b.id));
        infos
    }

    /// The system report, from cached results: never runs a check.
    ///
    /// Cheap: the report is rebuilt only when a status changed, a result turned stale, or
    /// (for fresher timestamps and durations) when checks ran and the cached report is older
    /// than the builder's `report_max_age`; otherwise this is an `Arc` clone.
    #[must_use]
    pub fn report(&self) -> Arc<SystemReport> {
        self.inner.report(false)
    }

    /// The system status, from cached results.
    #[must_use]
    pub fn system_status(&self) -> CheckStatus {
        self.report().condition
    }

    /// The latest result of the dependency `id`, from cache, with staleness and causes applied.
    #[must_use]
    pub fn result(&self, id: &str) -> Option<Arc<CheckResult>> {
        let entry = self.inner.entry(id)?;
        Some(self.inner.current(&entry))
    }

    /// Checks the dependency `id` now and answers with the fresh result. If a check of it is
    /// already running, joins that one instead of starting another.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such dependency is registered (or it was removed while
    /// being checked).
    pub async fn refresh(&self, id: &str) -> Result<Arc<CheckResult>, Error> {
        let not_found = || Error::unknown_dependency(id);
        let entry = self.inner.entry(id).ok_or_else(not_found)?;
        self.inner.start_run(&entry).await.ok_or_else(not_found)?;
        Ok(self.inner.current(&entry))
    }

    /// Checks every dependency now, concurrently, and answers with the fresh report. Takes as
    /// long as the slowest check (at most its timeout), not the sum.
    pub async fn refresh_all(&self) -> Arc<SystemReport> {
        let entries: Vec<_> = read(&self.inner.entries).values().cloned().collect();
        let runs: Vec<RunFuture> = entries.iter().map(|e| self.inner.start_run(e)).collect();
        futures::future::join_all(runs).await;
        self.inner.report(true)
    }

    /// Whether every dependency has been checked at least once (what a startup probe asks).
    #[must_use]
    pub fn startup_complete(&self) -> bool {
        read(&self.inner.entries)
            .values()
            .all(|e| lock(&e.state).result.checked)
    }

    /// The history of the dependency `id`: transitions, last hour by minute, uptime.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such dependency is registered.
    pub fn history(&self, id: &str) -> Result<HistorySnapshot, Error> {
        let entry = self
            .inner
            .entry(id)
            .ok_or_else(|| Error::unknown_dependency(id))?;
        let now = self.inner.clock.wall();
        let snapshot = lock(&entry.state).history.snapshot(now);
        Ok(snapshot)
    }

    /// A stream of every event from now on. A receiver that falls behind by more than the
    /// builder's `event_capacity` loses the oldest events (and is told so).
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    /// Adds a listener; see [`Listener`] for why it cannot hurt the engine.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if the operating system refused a thread for it.
    pub fn add_listener(&self, listener: impl Listener) -> Result<(), Error> {
        let slot = ListenerSlot::start(Arc::new(listener))
            .map_err(|e| Error::invalid(format!("cannot start a listener thread: {e}")))?;
        write(&self.inner.listeners).push(slot);
        Ok(())
    }

    /// Events dropped because a listener was too slow to take them, over all listeners.
    #[must_use]
    pub fn dropped_listener_events(&self) -> u64 {
        read(&self.inner.listeners)
            .iter()
            .map(ListenerSlot::dropped)
            .sum()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("appname", &self.inner.config.appname)
            .field("dependencies", &read(&self.inner.entries).len())
            .field("features", &read(&self.inner.features).len())
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// The drain in force; one that ran out is cleared (and announced) on the way.
    fn drain_state(&self) -> Option<DrainState> {
        let mut drain = lock(&self.drain);
        if drain.as_ref().is_some_and(|d| d.is_over(self.clock.now())) {
            *drain = None;
            drop(drain);
            self.emit(&Event::Drain(None));
            return None;
        }
        drain.clone()
    }

    fn entry(&self, id: &str) -> Option<Arc<Entry>> {
        read(&self.entries).get(id).cloned()
    }

    fn feature_entry(&self, name: &str) -> Result<Arc<FeatureEntry>, Error> {
        read(&self.features)
            .get(name)
            .cloned()
            .ok_or_else(|| Error::unknown_feature(name))
    }

    fn is_registered(&self, entry: &Arc<Entry>) -> bool {
        read(&self.entries)
            .get(&entry.dep.info.id)
            .is_some_and(|e| Arc::ptr_eq(e, entry))
    }

    fn emit(&self, event: &Event) {
        let _ = self.events.send(event.clone());
        for listener in read(&self.listeners).iter() {
            listener.send(event);
        }
    }

    fn emit_feature(&self, update: FeatureUpdate) {
        self.emit(&Event::Feature {
            state: Arc::new(update.state),
            flip: update.flip,
        });
    }

    /// Starts a check of `entry`, or joins the one in flight.
    fn start_run(self: &Arc<Self>, entry: &Arc<Entry>) -> RunFuture {
        let mut slot = lock(&entry.inflight);
        if let Some(running) = slot.as_ref() {
            return running.clone();
        }
        let weak = Arc::downgrade(self);
        let clock = self.clock.clone();
        let task_entry = Arc::clone(entry);
        let task = tokio::spawn(async move {
            let executed = run::execute(&clock, &task_entry.dep).await;
            let recorded = weak
                .upgrade()
                .and_then(|inner| inner.record(&task_entry, executed));
            *lock(&task_entry.inflight) = None;
            recorded
        });
        let run = async move { task.await.ok().flatten() }.boxed().shared();
        *slot = Some(run.clone());
        run
    }

    /// Records an executed check; `None` if the dependency was removed meanwhile.
    fn record(
        self: &Arc<Self>,
        entry: &Arc<Entry>,
        executed: run::Executed,
    ) -> Option<Arc<CheckResult>> {
        if !self.is_registered(entry) {
            return None;
        }
        let info = &entry.dep.info;
        let kind = executed.kind;
        let wall = self.clock.wall_at(executed.finished);
        let (recorded, significant) = {
            let mut state = lock(&entry.state);
            let was_stale = state.is_stale(info, executed.finished);
            let was_flapping = state.result.flapping;
            let recorded = state.record(info, executed, wall, self.config.entry);
            let significant =
                recorded.changed() || was_stale || was_flapping != recorded.result.flapping;
            (recorded, significant)
        };
        self.check_gen.fetch_add(1, Ordering::AcqRel);
        if significant {
            self.status_gen.fetch_add(1, Ordering::AcqRel);
        }
        self.emit(&Event::Checked {
            result: Arc::clone(&recorded.result),
            outcome: kind,
        });
        if significant {
            self.emit(&Event::Changed {
                previous: recorded.previous,
                current: self.current(entry),
            });
            self.reevaluate_features();
        }
        Some(recorded.result)
    }

    /// The result of `entry` as reported now: staleness applied, causes from the cached report.
    fn current(&self, entry: &Entry) -> Arc<CheckResult> {
        let view = lock(&entry.state).view(entry.info(), self.clock.now());
        if view.status == CheckStatus::Ok || entry.info().parents.is_empty() {
            return view;
        }
        let report = self.report(false);
        let blocked_by = graph::causes_from_report(&entry.info().parents, &report);
        if blocked_by.is_empty() {
            return view;
        }
        let mut view = (*view).clone();
        view.blocked_by = blocked_by;
        Arc::new(view)
    }

    fn report(&self, force: bool) -> Arc<SystemReport> {
        let now = self.clock.now();
        let status_gen = self.status_gen.load(Ordering::Acquire);
        let check_gen = self.check_gen.load(Ordering::Acquire);
        let fresh = |c: &Cached| {
            c.status_gen == status_gen
                && now < c.valid_until
                && (c.check_gen == check_gen
                    || (!force && now < c.built_at + self.config.report_max_age))
        };
        if let Some(cached) = read(&self.cache).as_ref().filter(|c| fresh(c)) {
            return Arc::clone(&cached.report);
        }
        let _rebuilding = lock(&self.rebuilding);
        if let Some(cached) = read(&self.cache).as_ref().filter(|c| fresh(c)) {
            return Arc::clone(&cached.report);
        }
        let cached = Arc::new(self.build_report(now, status_gen, check_gen));
        let report = Arc::clone(&cached.report);
        *write(&self.cache) = Some(cached);
        report
    }

    fn build_report(&self, now: Instant, status_gen: u64, check_gen: u64) -> Cached {
        let entries: Vec<Arc<Entry>> = read(&self.entries).values().cloned().collect();
        // Rebuild at least hourly, so stale messages keep telling the right age.
        let mut valid_until = now + Duration::from_secs(3600);
        let mut results = Vec::with_capacity(entries.len());
        let mut parents = Vec::with_capacity(entries.len());
        for entry in &entries {
            let info = entry.info();
            let state = lock(&entry.state);
            let stale_at = state.stale_at(info);
            if stale_at > now {
                valid_until = valid_until.min(stale_at);
            }
            results.push(state.view(info, now));
            parents.push(info.parents.as_slice());
        }
        graph::attribute_causes(&mut results, &parents);
        let report = SystemReport::new(
            self.config.hostname.clone(),
            self.config.appname.clone(),
            self.clock.wall_at(now),
            results,
        );
        Cached {
            report: Arc::new(report),
            status_gen,
            check_gen,
            built_at: now,
            valid_until,
        }
    }

    /// The reported status of `id` now (staleness applied), if registered.
    fn status_of(&self, id: &DependencyId, now: Instant) -> Option<CheckStatus> {
        let entry = self.entry(id.as_str())?;
        let state = lock(&entry.state);
        let status = state.result.status;
        Some(if state.is_stale(entry.info(), now) {
            status.no_better_than(CheckStatus::Major)
        } else {
            status
        })
    }

    fn requirement_states(&self, requirements: &[Requirement]) -> Vec<feature::RequirementState> {
        let now = self.clock.now();
        let mut system = None;
        feature::evaluate(
            requirements,
            |id| self.status_of(id, now),
            || *system.get_or_insert_with(|| self.report(false).condition),
        )
    }

    /// Re-evaluates every feature's requirements; emits what changed.
    fn reevaluate_features(&self) {
        let _serial = lock(&self.evaluating_features);
        let features: Vec<_> = read(&self.features).values().cloned().collect();
        let wall = self.clock.wall();
        for feature in features {
            let requirements = self.requirement_states(feature.feature.requirements());
            if let Some(update) = feature.reevaluate(requirements, wall) {
                self.emit_feature(update);
            }
        }
    }

    fn start_scheduler(self: &Arc<Self>, runtime: &tokio::runtime::Handle, entry: &Arc<Entry>) {
        let seed = {
            use std::hash::BuildHasher;
            std::hash::RandomState::new().hash_one((self.jitter_seed, entry.info().id.as_str()))
        };
        let task = runtime.spawn(schedule(
            Arc::downgrade(self),
            Arc::clone(entry),
            Jitter::new(seed, self.config.jitter),
        ));
        *lock(&entry.scheduler) = Some(task.abort_handle());
    }

    fn ensure_watchdog(self: &Arc<Self>, runtime: &tokio::runtime::Handle) {
        let mut watchdog = lock(&self.watchdog);
        if watchdog.is_none() {
            let task = runtime.spawn(watch(Arc::downgrade(self), self.config.watchdog_interval));
            *watchdog = Some(task.abort_handle());
        }
    }

    /// Marks results that turned stale, and restarts a scheduler that died.
    fn sweep(self: &Arc<Self>) {
        let _ = self.drain_state(); // announces a drain that ran out
        let now = self.clock.now();
        let entries: Vec<Arc<Entry>> = read(&self.entries).values().cloned().collect();
        let mut changed = Vec::new();
        for entry in &entries {
            let info = entry.info();
            {
                let mut state = lock(&entry.state);
                let stale = state.is_stale(info, now);
                if stale != state.stale_reported {
                    state.stale_reported = stale;
                    changed.push((Arc::clone(entry), state.result.status));
                }
            }
            let dead = lock(&entry.scheduler)
                .as_ref()
                .is_some_and(AbortHandle::is_finished);
            if dead && self.is_registered(entry) {
                tracing::error!(dependency = %info.id, "scheduler stopped; restarting it");
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    self.start_scheduler(&runtime, entry);
                }
            }
        }
        if changed.is_empty() {
            return;
        }
        self.status_gen.fetch_add(1, Ordering::AcqRel);
        for (entry, previous) in changed {
            let current = self.current(&entry);
            if current.stale {
                tracing::warn!(dependency = %current.id, "result is stale: {}", current.message);
            }
            self.emit(&Event::Changed {
                previous: Some(previous),
                current,
            });
        }
        self.reevaluate_features();
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(watchdog) = lock(&self.watchdog).take() {
            watchdog.abort();
        }
        for entry in read(&self.entries).values() {
            entry.stop();
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
