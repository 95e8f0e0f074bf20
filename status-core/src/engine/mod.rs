//! The registry and its engine. One owner per piece of state, each in its own file with its
//! own lock: the dependency table (`deps`), features (`features`), rotation holds
//! (`rotation`), the event bus (`bus`) and the report cache (`cache`). [`Registry`] is the
//! only façade; `Inner` only wires them together.

mod builder;
mod bus;
mod cache;
mod deps;
mod entry;
mod facts;
mod features;
mod folds;
mod graph;
mod groups;
mod hysteresis;
mod inner;
mod mutes;
mod observe;
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
pub use self::observe::{Observed, Observer};
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
    pub(crate) serve_policy: crate::ServePolicy,
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
    facts: facts::FactsCache,
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
                facts: facts::FactsCache::default(),
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
