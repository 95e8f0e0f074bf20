//! A dependency: what it is, how much it matters, and how to check it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::check::{Check, DynCheck};
use crate::{DependencyId, Error, Urgency};

/// The default timeout of a check.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default period between two checks.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(30);
/// The default number of consecutive failures before the real status is reported.
pub const DEFAULT_FAILURES_BEFORE_OUTAGE: u32 = 3;
/// The default number of consecutive successes before a failing dependency reports OK again.
pub const DEFAULT_SUCCESSES_BEFORE_RECOVERY: u32 = 1;

/// A dependency ready to register: its description and its check.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_core::{check, Dependency, Urgency};
///
/// let db = Dependency::builder("primary-db", check::ping(|| async { Ok::<_, std::io::Error>(()) }))
///     .description("Orders database")
///     .urgency(Urgency::Required)
///     .kind("postgres")
///     .timeout(Duration::from_secs(2))
///     .period(Duration::from_secs(10))
///     .build()
///     .unwrap();
/// assert_eq!(db.info().id().as_str(), "primary-db");
/// ```
#[derive(Clone)]
pub struct Dependency {
    pub(crate) info: Arc<DependencyInfo>,
    pub(crate) check: Arc<dyn DynCheck>,
}

/// What is known of a dependency besides its check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependencyInfo {
    pub(crate) id: DependencyId,
    pub(crate) description: String,
    pub(crate) urgency: Urgency,
    pub(crate) kind: String,
    pub(crate) service_pool: String,
    pub(crate) documentation_url: String,
    pub(crate) timeout: Duration,
    pub(crate) period: Duration,
    pub(crate) tags: Vec<String>,
    pub(crate) parents: Vec<DependencyId>,
    pub(crate) failures_before_outage: u32,
    pub(crate) successes_before_recovery: u32,
}

impl Dependency {
    /// Starts describing the dependency `id`, checked by `check`.
    pub fn builder(id: impl Into<String>, check: impl Check) -> DependencyBuilder {
        DependencyBuilder::new(id.into(), Some(Arc::new(check)))
    }

    /// Starts describing the passive dependency `id`, whose results are pushed by live
    /// traffic rather than polled: finish with [`DependencyBuilder::build_info`] and register
    /// it with [`Registry::add_passive`](crate::Registry::add_passive). Its period is how long
    /// without a result before it says `idle`.
    pub fn passive(id: impl Into<String>) -> DependencyBuilder {
        DependencyBuilder::new(id.into(), None)
    }

    /// Its description.
    #[must_use]
    pub fn info(&self) -> &DependencyInfo {
        &self.info
    }

    /// Back to a builder with the same settings and check, to change some before registering
    /// (a period read from configuration on a dependency declared with the macro, say).
    pub fn into_builder(self) -> DependencyBuilder {
        let info = Arc::unwrap_or_clone(self.info);
        DependencyBuilder {
            id: info.id.to_string(),
            check: Some(self.check),
            description: Some(info.description),
            urgency: info.urgency,
            kind: info.kind,
            service_pool: info.service_pool,
            documentation_url: info.documentation_url,
            timeout: info.timeout,
            period: info.period,
            tags: info.tags,
            parents: info.parents.iter().map(ToString::to_string).collect(),
            failures_before_outage: info.failures_before_outage,
            successes_before_recovery: info.successes_before_recovery,
        }
    }
}

impl fmt::Debug for Dependency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dependency")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl DependencyInfo {
    /// Its unique id.
    #[must_use]
    pub fn id(&self) -> &DependencyId {
        &self.id
    }
    /// What it is, for people (defaults to the id).
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }
    /// How much the system needs it.
    #[must_use]
    pub fn urgency(&self) -> Urgency {
        self.urgency
    }
    /// Its type: `postgres`, `redis`, `http`, … (empty when not said).
    #[must_use]
    pub fn kind(&self) -> &str {
        &self.kind
    }
    /// The pool of servers it belongs to (empty when not said).
    #[must_use]
    pub fn service_pool(&self) -> &str {
        &self.service_pool
    }
    /// Where operators read what to do when it fails (empty when not said).
    #[must_use]
    pub fn documentation_url(&self) -> &str {
        &self.documentation_url
    }
    /// How long one check may run before it is cancelled and reported OUTAGE.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
    /// The time between two checks.
    #[must_use]
    pub fn period(&self) -> Duration {
        self.period
    }
    /// Free-form tags, for filtering.
    #[must_use]
    pub fn tags(&self) -> &[String] {
        &self.tags
    }
    /// The dependencies this one depends on.
    #[must_use]
    pub fn parents(&self) -> &[DependencyId] {
        &self.parents
    }
    /// Consecutive failures before a dependency that has succeeded reports its real status.
    #[must_use]
    pub fn failures_before_outage(&self) -> u32 {
        self.failures_before_outage
    }
    /// Consecutive successes before a failing dependency reports OK again.
    #[must_use]
    pub fn successes_before_recovery(&self) -> u32 {
        self.successes_before_recovery
    }
    /// How old a result may get before it is stale: three periods plus the timeout.
    #[must_use]
    pub fn stale_after(&self) -> Duration {
        self.period.saturating_mul(3).saturating_add(self.timeout)
    }
}

/// Builds a [`Dependency`]; see [`Dependency::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct DependencyBuilder {
    id: String,
    /// `None` for a passive dependency.
    check: Option<Arc<dyn DynCheck>>,
    description: Option<String>,
    urgency: Urgency,
    kind: String,
    service_pool: String,
    documentation_url: String,
    timeout: Duration,
    period: Duration,
    tags: Vec<String>,
    parents: Vec<String>,
    failures_before_outage: u32,
    successes_before_recovery: u32,
}

impl DependencyBuilder {
    fn new(id: String, check: Option<Arc<dyn DynCheck>>) -> Self {
        Self {
            id,
            check,
            description: None,
            urgency: Urgency::default(),
            kind: String::new(),
            service_pool: String::new(),
            documentation_url: String::new(),
            timeout: DEFAULT_TIMEOUT,
            period: DEFAULT_PERIOD,
            tags: Vec::new(),
            parents: Vec::new(),
            failures_before_outage: DEFAULT_FAILURES_BEFORE_OUTAGE,
            successes_before_recovery: DEFAULT_SUCCESSES_BEFORE_RECOVERY,
        }
    }

    /// What it is, for people.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
    /// How much the system needs it (default [`Urgency::Required`]).
    pub fn urgency(mut self, urgency: Urgency) -> Self {
        self.urgency = urgency;
        self
    }
    /// Its type: `postgres`, `redis`, `http`, … (serialized as `type`).
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }
    /// The pool of servers it belongs to.
    pub fn service_pool(mut self, pool: impl Into<String>) -> Self {
        self.service_pool = pool.into();
        self
    }
    /// Where operators read what to do when it fails.
    pub fn documentation_url(mut self, url: impl Into<String>) -> Self {
        self.documentation_url = url.into();
        self
    }
    /// How long one check may run (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// The time between two checks (default 30 s).
    pub fn period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }
    /// Adds a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }
    /// Declares that this dependency depends on `parent`: while the parent fails, this one's
    /// failures name it as their cause (`blockedBy`).
    pub fn depends_on(mut self, parent: impl Into<String>) -> Self {
        self.parents.push(parent.into());
        self
    }
    /// Consecutive failures before a dependency that has succeeded reports its real status
    /// (default 3; 1 reports every failure at once).
    pub fn failures_before_outage(mut self, n: u32) -> Self {
        self.failures_before_outage = n;
        self
    }
    /// Consecutive successes before a failing dependency reports OK again (default 1).
    pub fn successes_before_recovery(mut self, n: u32) -> Self {
        self.successes_before_recovery = n;
        self
    }

    /// The dependency.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid_id`] for a bad id or parent id; [`Error::is_invalid`] for a zero
    /// timeout or period, a zero failure or success count, a dependency listed as its own
    /// parent, or a passive dependency (it has no check: use
    /// [`build_info`](Self::build_info)).
    pub fn build(mut self) -> Result<Dependency, Error> {
        let Some(check) = self.check.take() else {
            return Err(Error::invalid(format!(
                "dependency {}: a passive dependency has no check; register it with add_passive",
                self.id
            )));
        };
        Ok(Dependency {
            info: Arc::new(self.build_info()?),
            check,
        })
    }

    /// What is known of the dependency, without its check: what
    /// [`Registry::add_passive`](crate::Registry::add_passive) takes. Credentials in the
    /// description are masked.
    ///
    /// # Errors
    ///
    /// As [`build`](Self::build), but a passive dependency is fine.
    pub fn build_info(self) -> Result<DependencyInfo, Error> {
        let id = DependencyId::new(&self.id)?;
        if self.timeout.is_zero() || self.period.is_zero() {
            return Err(Error::invalid(format!(
                "dependency {id}: timeout and period must be longer than zero"
            )));
        }
        if self.failures_before_outage == 0 || self.successes_before_recovery == 0 {
            return Err(Error::invalid(format!(
                "dependency {id}: failure and success counts must be at least 1"
            )));
        }
        let mut parents = Vec::with_capacity(self.parents.len());
        for parent in &self.parents {
            let parent = DependencyId::new(parent)?;
            if parent == id {
                return Err(Error::cycle(id.as_str()));
            }
            if !parents.contains(&parent) {
                parents.push(parent);
            }
        }
        Ok(DependencyInfo {
            description: crate::mask::masked(self.description.unwrap_or_else(|| id.to_string())),
            id,
            urgency: self.urgency,
            kind: self.kind,
            service_pool: self.service_pool,
            documentation_url: self.documentation_url,
            timeout: self.timeout,
            period: self.period,
            tags: self.tags,
            parents,
            failures_before_outage: self.failures_before_outage,
            successes_before_recovery: self.successes_before_recovery,
        })
    }
}

impl fmt::Debug for DependencyBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DependencyBuilder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check;
    use crate::CheckStatus;

    fn noop() -> impl Check {
        check::tiered(|| async { CheckStatus::Ok })
    }

    #[test]
    fn defaults() {
        let dep = Dependency::builder("db", noop()).build().unwrap();
        let info = dep.info();
        assert_eq!(info.description(), "db");
        assert_eq!(info.urgency(), Urgency::Required);
        assert_eq!(info.timeout(), DEFAULT_TIMEOUT);
        assert_eq!(info.period(), DEFAULT_PERIOD);
        assert_eq!(info.failures_before_outage(), 3);
        assert_eq!(info.stale_after(), Duration::from_secs(100));
    }

    #[test]
    fn into_builder_keeps_everything_but_what_is_changed() {
        let dep = Dependency::builder("db", noop())
            .urgency(Urgency::Weak)
            .tag("t")
            .depends_on("net")
            .build()
            .unwrap();
        let changed = dep
            .clone()
            .into_builder()
            .period(Duration::from_secs(5))
            .build()
            .unwrap();
        assert_eq!(changed.info().period(), Duration::from_secs(5));
        let mut expected = dep.info().clone();
        expected.period = Duration::from_secs(5);
        assert_eq!(changed.info(), &expected);
    }

    #[test]
    fn rejects_bad_configuration() {
        assert!(Dependency::builder("Bad", noop())
            .build()
            .unwrap_err()
            .is_invalid_id());
        let zero = Dependency::builder("db", noop())
            .timeout(Duration::ZERO)
            .build();
        assert!(zero.unwrap_err().is_invalid());
        let zero = Dependency::builder("db", noop())
            .failures_before_outage(0)
            .build();
        assert!(zero.unwrap_err().is_invalid());
        let own = Dependency::builder("db", noop()).depends_on("db").build();
        assert!(own.unwrap_err().is_cycle());
        let bad_parent = Dependency::builder("db", noop()).depends_on("No").build();
        assert!(bad_parent.unwrap_err().is_invalid_id());
    }
}
