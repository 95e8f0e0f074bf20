//! The registry and its engine. One owner per piece of state, each in its own file with its
//! own lock: the dependency table (`deps`), features (`features`), rotation holds
//! (`rotation`), the event bus (`bus`) and the report cache (`cache`). [`Registry`] is the
//! only façade; `Inner` only wires them together.

mod builder;
mod bus;
mod cache;
mod deps;
mod entry;
mod features;
mod folds;
mod graph;
mod groups;
mod hysteresis;
mod mutes;
mod passive;
mod rotation;
mod run;
mod schedule;

use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::FutureExt;
use tokio::task::AbortHandle;

pub use self::builder::RegistryBuilder;
use self::bus::Bus;
use self::cache::{Cached, ReportCache, Wanted};
use self::deps::DependencyTable;
use self::entry::{Entry, EntryConfig, RunFuture};
pub use self::features::FeatureHandle;
use self::features::FeatureTable;
use self::mutes::Mutes;
pub use self::passive::Reporter;
use self::rotation::Rotation;
pub use self::run::TIMED_OUT;
use self::schedule::{schedule, watch, Jitter};
use crate::check::DynCheck;
use crate::event::Event;
use crate::history::HistorySnapshot;
use crate::sync::lock;
use crate::{
    CheckResult, CheckStatus, Clock, Dependency, DependencyInfo, Error, Rng, SystemReport,
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
/// assert_eq!(report.condition(), CheckStatus::Ok);
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

pub(crate) struct Inner {
    clock: Clock,
    config: Config,
    /// The root of every random choice; see [`RegistryBuilder::seed`].
    rng: Rng,
    deps: DependencyTable,
    features: FeatureTable,
    rotation: Rotation,
    mutes: Mutes,
    bus: Bus,
    cache: ReportCache,
    watchdog: Mutex<Option<AbortHandle>>,
}

/// A handle on a registry that does not keep it alive: for background tasks that should end
/// with it.
#[derive(Clone)]
pub struct WeakRegistry {
    inner: Weak<Inner>,
}

impl std::fmt::Debug for WeakRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakRegistry").finish_non_exhaustive()
    }
}

impl WeakRegistry {
    /// The registry, if it still exists.
    #[must_use]
    pub fn upgrade(&self) -> Option<Registry> {
        self.inner.upgrade().map(|inner| Registry { inner })
    }
}

impl Registry {
    /// A handle that does not keep the registry alive.
    #[must_use]
    pub fn downgrade(&self) -> WeakRegistry {
        WeakRegistry {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// A registry with the default settings; see [`Registry::builder`] for the others.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts configuring a registry.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    fn from_parts(clock: Clock, config: Config, event_capacity: usize, rng: Rng) -> Self {
        Self {
            inner: Arc::new(Inner {
                clock,
                config,
                rng,
                deps: DependencyTable::default(),
                features: FeatureTable::default(),
                rotation: Rotation::default(),
                mutes: Mutes::default(),
                bus: Bus::new(event_capacity),
                cache: ReportCache::default(),
                watchdog: Mutex::new(None),
            }),
        }
    }

    /// The clock the registry reads.
    #[must_use]
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// A random generator for `purpose`, derived from the registry's seed: with
    /// [`RegistryBuilder::seed`], the same seed and purpose give the same numbers in every
    /// run. Mechanisms built on the registry draw their randomness here.
    #[must_use]
    pub fn rng(&self, purpose: &str) -> Rng {
        self.inner.rng.derive(purpose)
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
        dependency.check.attach_clock(&self.inner.clock);
        let entry = self
            .inner
            .register(dependency.info, Some(dependency.check))?;
        self.inner.start_scheduler(&runtime, &entry);
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
        let entry = inner
            .deps
            .remove(id)
            .ok_or_else(|| Error::unknown_dependency(id))?;
        entry.stop();
        inner.bus.emit(&Event::Removed(entry.info.id.clone()));
        inner.reevaluate_features();
        Ok(())
    }

    /// Whether a dependency `id` is registered.
    #[must_use]
    pub fn contains(&self, id: &str) -> bool {
        self.inner.deps.contains(id)
    }

    /// The registered dependencies, sorted by id.
    #[must_use]
    pub fn dependencies(&self) -> Vec<Arc<DependencyInfo>> {
        let mut infos: Vec<_> = self
            .inner
            .deps
            .all()
            .iter()
            .map(|e| Arc::clone(&e.info))
            .collect();
        infos.sort_by(|a, b| a.id.cmp(&b.id));
        infos
    }

    /// The system report, from cached results: never runs a check.
    ///
    /// Cheap: the report is rebuilt only when a status changed, a result turned stale, or
    /// (for fresher timestamps and durations) when checks ran and the cached report is older
    /// than the builder's `report_max_age`; otherwise this is an `Arc` clone. While another
    /// caller rebuilds it, a read gets the cached report at once rather than wait.
    #[must_use]
    pub fn report(&self) -> Arc<SystemReport> {
        self.inner.report(false)
    }

    /// The system status: a single atomic load, kept up to date on every recorded result,
    /// staleness and registration. What gates call on every request.
    #[must_use]
    pub fn condition(&self) -> CheckStatus {
        self.inner.deps.condition()
    }

    /// The latest result of the dependency `id`, from cache, with staleness and causes applied.
    #[must_use]
    pub fn result(&self, id: &str) -> Option<Arc<CheckResult>> {
        let entry = self.inner.deps.get(id)?;
        Some(self.inner.current(&entry))
    }

    /// Checks the dependency `id` now and answers with the fresh result. If a check of it is
    /// already running, joins that one instead of starting another. A passive dependency
    /// is not checked: its latest result is the answer.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such dependency is registered (or it was removed while
    /// being checked).
    pub async fn refresh(&self, id: &str) -> Result<Arc<CheckResult>, Error> {
        let not_found = || Error::unknown_dependency(id);
        let entry = self.inner.deps.get(id).ok_or_else(not_found)?;
        if let Some(run) = self.inner.start_run(&entry) {
            run.await.ok_or_else(not_found)?;
        }
        Ok(self.inner.current(&entry))
    }

    /// Checks every polled dependency now, concurrently, and answers with the fresh report.
    /// Takes as long as the slowest check (at most its timeout), not the sum.
    pub async fn refresh_all(&self) -> Arc<SystemReport> {
        let entries = self.inner.deps.all();
        let runs: Vec<RunFuture> = entries
            .iter()
            .filter_map(|e| self.inner.start_run(e))
            .collect();
        futures::future::join_all(runs).await;
        self.inner.report(true)
    }

    /// Whether every polled dependency has been checked at least once. One atomic load,
    /// kept by the same rule as [`startup`](Self::startup).
    #[must_use]
    pub fn startup_complete(&self) -> bool {
        self.inner.deps.startup_complete()
    }

    /// What a startup probe asks: whether every polled dependency has been checked once, and
    /// which are still pending (from the current report).
    #[must_use]
    pub fn startup(&self) -> crate::Startup {
        self.report().startup()
    }

    /// The history of the dependency `id`: transitions, last hour by minute, uptime.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such dependency is registered.
    pub fn history(&self, id: &str) -> Result<HistorySnapshot, Error> {
        let entry = self
            .inner
            .deps
            .get(id)
            .ok_or_else(|| Error::unknown_dependency(id))?;
        let now = self.inner.clock.wall();
        let snapshot = lock(&entry.state).history.snapshot(now);
        Ok(snapshot)
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
            .field("dependencies", &self.inner.deps.len())
            .field("features", &self.inner.features.len())
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Adds a dependency to the table, announces it, and starts the watchdog.
    fn register(
        self: &Arc<Self>,
        info: Arc<DependencyInfo>,
        check: Option<Arc<dyn DynCheck>>,
    ) -> Result<Arc<Entry>, Error> {
        let entry = Arc::new(Entry::new(
            info,
            check,
            self.clock.now(),
            self.clock.wall(),
            self.config.transitions_kept,
        ));
        self.deps.insert(&entry)?;
        self.bus.emit(&Event::Added(Arc::clone(&entry.info)));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            self.ensure_watchdog(&runtime);
        }
        self.reevaluate_features();
        Ok(entry)
    }

    /// Starts a check of `entry`, or joins the one in flight; `None` for a passive one.
    fn start_run(self: &Arc<Self>, entry: &Arc<Entry>) -> Option<RunFuture> {
        let check = Arc::clone(entry.check.as_ref()?);
        let mut slot = lock(&entry.inflight);
        if let Some(running) = slot.as_ref() {
            return Some(running.clone());
        }
        let weak = Arc::downgrade(self);
        let clock = self.clock.clone();
        let task_entry = Arc::clone(entry);
        let task = tokio::spawn(async move {
            let executed = run::execute(&clock, &task_entry.info, check).await;
            let recorded = weak
                .upgrade()
                .and_then(|inner| inner.record(&task_entry, executed));
            *lock(&task_entry.inflight) = None;
            recorded
        });
        let run = async move { task.await.ok().flatten() }.boxed().shared();
        *slot = Some(run.clone());
        Some(run)
    }

    /// Records a result, polled or pushed; `None` if the dependency was removed meanwhile.
    fn record(&self, entry: &Arc<Entry>, executed: run::Executed) -> Option<Arc<CheckResult>> {
        let kind = executed.kind;
        let wall = self.clock.wall_at(executed.finished);
        let recorded = self.deps.record(entry, executed, wall, self.config.entry)?;
        self.bus.emit(&Event::Checked {
            result: Arc::clone(&recorded.result),
            outcome: kind,
        });
        if recorded.significant {
            let current = self.current(entry);
            log_change(recorded.previous, &current);
            self.bus.emit(&Event::Changed {
                previous: recorded.previous,
                current,
            });
            self.reevaluate_features();
        }
        Some(recorded.result)
    }

    /// The result of `entry` as reported now: staleness applied, causes from the cached report.
    fn current(&self, entry: &Entry) -> Arc<CheckResult> {
        let now = self.clock.now();
        let mut view = lock(&entry.state).view(&entry.info, now);
        if let Some(mute) = self.mutes.in_force(&entry.info.id, now) {
            Arc::make_mut(&mut view).mute = Some(mute);
        }
        if view.status == CheckStatus::Ok || entry.info.parents.is_empty() {
            return view;
        }
        // From the ancestors' entries: recording one result never rebuilds the report.
        let blocked_by = graph::causes(&entry.info.parents, &|id: &crate::DependencyId| {
            let parent = self.deps.get(id.as_str())?;
            let status = lock(&parent.state).reported_status(&parent.info, now);
            Some((status, parent.info.parents.clone()))
        });
        if blocked_by.is_empty() {
            return view;
        }
        Arc::make_mut(&mut view).blocked_by = blocked_by;
        view
    }

    fn report(&self, force: bool) -> Arc<SystemReport> {
        let now = self.clock.now();
        let (status_gen, check_gen) = self.deps.generations();
        let want = Wanted {
            now,
            status_gen,
            check_gen,
            max_age: (!force).then_some(self.config.report_max_age),
        };
        self.cache.get(want, || self.build_report(want))
    }

    fn build_report(&self, want: Wanted) -> Cached {
        let Wanted {
            now,
            status_gen,
            check_gen,
            ..
        } = want;
        let entries = self.deps.all();
        // Rebuild at least hourly, so stale messages keep telling the right age.
        let mut valid_until = now + Duration::from_secs(3600);
        let mut results = Vec::with_capacity(entries.len());
        let mut parents = Vec::with_capacity(entries.len());
        for entry in &entries {
            let info = entry.info();
            let state = lock(&entry.state);
            let ages_at = state.ages_at(info);
            if ages_at > now {
                valid_until = valid_until.min(ages_at);
            }
            let mut view = state.view(info, now);
            if let Some(mute) = self.mutes.in_force(&info.id, now) {
                Arc::make_mut(&mut view).mute = Some(mute);
            }
            results.push(view);
            parents.push(info.parents.as_slice());
        }
        if let Some(edge) = self.mutes.next_edge(now) {
            valid_until = valid_until.min(edge);
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

    fn start_scheduler(self: &Arc<Self>, runtime: &tokio::runtime::Handle, entry: &Arc<Entry>) {
        let rng = self.rng.derive(&format!("jitter/{}", entry.info.id));
        let task = runtime.spawn(schedule(
            Arc::downgrade(self),
            Arc::clone(entry),
            Jitter::new(rng, self.config.jitter),
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

    /// Marks results that turned stale or idle, ends holds that ran out, and restarts a
    /// scheduler that died.
    fn sweep(self: &Arc<Self>) {
        self.expire_holds(); // drops and announces a hold that ran out
        self.sweep_mutes(); // and a window that started or ended
        let now = self.clock.now();
        for entry in self.deps.all() {
            let dead = lock(&entry.scheduler)
                .as_ref()
                .is_some_and(AbortHandle::is_finished);
            if dead && self.deps.is_registered(&entry) {
                tracing::error!(dependency = %entry.info.id, "scheduler stopped; restarting it");
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    self.start_scheduler(&runtime, &entry);
                }
            }
        }
        let changed = self.deps.sweep_aged(now);
        if changed.is_empty() {
            return;
        }
        for (entry, previous) in changed {
            let current = self.current(&entry);
            log_change(Some(previous), &current);
            self.bus.emit(&Event::Changed {
                previous: Some(previous),
                current,
            });
        }
        self.reevaluate_features();
    }
}

/// One line in the application's log for a dependency's change of level, with its cause:
/// INFO for a recovery, WARN for MINOR and MAJOR, ERROR for OUTAGE. A first result that is
/// OK is no change worth a line.
fn log_change(previous: Option<CheckStatus>, current: &CheckResult) {
    let to = current.status();
    if previous == Some(to) || (previous.is_none() && to == CheckStatus::Ok) {
        return;
    }
    let id = current.id();
    let was = previous.map_or("unchecked", CheckStatus::as_str);
    let cause = current.message_with_cause();
    let stale = if current.stale { " (stale)" } else { "" };
    let muted = if current.mute().is_some() {
        " (muted)"
    } else {
        ""
    };
    match to {
        CheckStatus::Ok => {
            tracing::info!(dependency = %id, from = was, "{id} is OK again (was {was})");
        }
        CheckStatus::Minor | CheckStatus::Major => tracing::warn!(
            dependency = %id,
            from = was,
            to = %to,
            "{id} is {to} (was {was}){stale}{muted}: {cause}"
        ),
        CheckStatus::Outage => tracing::error!(
            dependency = %id,
            from = was,
            "{id} is OUTAGE (was {was}){stale}{muted}: {cause}"
        ),
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(watchdog) = lock(&self.watchdog).take() {
            watchdog.abort();
        }
        for entry in self.deps.all() {
            entry.stop();
        }
    }
}
