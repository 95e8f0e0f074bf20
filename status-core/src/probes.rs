//! The probes' verdicts, composed once for every transport: liveness, readiness (the
//! system's or a bound group's, then an excuse such as the fleet's) and startup. HTTP
//! (`status_http::Routes::probes`) and gRPC (`status_grpc::HealthService::probes`) render
//! these; neither derives its own.

use std::sync::Arc;

use crate::{CheckStatus, Readiness, Registry, RotationHold, Startup, SystemReport, WeakRegistry};

/// How an instance's probes are answered. Cheap to clone: clones answer alike. Give the same
/// one to every transport that answers probes, so that HTTP and gRPC never disagree.
///
/// # Example
///
/// ```
/// use status_core::{Probes, Registry};
///
/// let registry = Registry::new();
/// let probes = Probes::new(&registry).readiness_group("ready");
/// // A group that does not exist is not ready, and says why.
/// assert!(!probes.ready(false).ready());
/// assert!(probes.live().is_ok());
/// ```
#[derive(Clone)]
pub struct Probes {
    registry: Registry,
    rules: Rules,
}

/// How readiness is composed, whatever the registry.
#[derive(Clone, Default)]
struct Rules {
    group: Option<String>,
    excuse: Option<Arc<dyn Excuse>>,
}

/// What may excuse an instance whose readiness fails on its condition alone: status-fleet's
/// `FleetExcuse` (the failure is shared by most of its data center, so it is the data
/// center's), or a rule of your own. Told the instance's own readiness, it answers the
/// readiness to serve; it may only excuse what [`Readiness::fails_on_condition_alone`], and
/// says so with [`Readiness::by_fleet`].
pub trait Excuse: Send + Sync + 'static {
    /// `own`, judged again. Called on every readiness probe: answer from memory.
    fn judge(&self, own: Readiness) -> Readiness;

    /// What this excuse is, for `Debug` (`fleet dc-1/web-7`).
    fn describe(&self) -> String {
        "excuse".to_owned()
    }
}

/// [`Probes`] that do not keep their registry alive: for a task that should end with it.
#[derive(Clone)]
pub struct WeakProbes {
    registry: WeakRegistry,
    rules: Rules,
}

impl std::fmt::Debug for WeakProbes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakProbes").finish_non_exhaustive()
    }
}

impl WeakProbes {
    /// The probes, while their registry lives.
    #[must_use]
    pub fn upgrade(&self) -> Option<Probes> {
        Some(Probes {
            registry: self.registry.upgrade()?,
            rules: self.rules.clone(),
        })
    }
}

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probes")
            .field("group", &self.rules.group)
            .field(
                "excuse",
                &self.rules.excuse.as_ref().map(|excuse| excuse.describe()),
            )
            .finish_non_exhaustive()
    }
}

impl Probes {
    /// The probes of `registry`: readiness by the system's condition, no fleet excuse.
    #[must_use]
    pub fn new(registry: &Registry) -> Self {
        Self {
            registry: registry.clone(),
            rules: Rules::default(),
        }
    }

    /// Readiness answers by the probe group `name` (its rule, its condition, and holds and
    /// startup as the group counts them). A group that does not exist when asked is not
    /// ready, and says so.
    #[must_use]
    pub fn readiness_group(mut self, name: impl Into<String>) -> Self {
        self.rules.group = Some(name.into());
        self
    }

    /// Readiness failing on the condition alone is judged again by `excuse`: status-fleet's
    /// `FleetExcuse` for fleet-aware readiness (a failure most of the data center shares is
    /// left to the data center's endpoint). Holds and startup still fail readiness.
    #[must_use]
    pub fn excuse(mut self, excuse: impl Excuse) -> Self {
        self.rules.excuse = Some(Arc::new(excuse));
        self
    }

    /// Checks that what these probes name exists: the bound readiness group.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`](crate::Error::is_not_found) when readiness is bound to a group
    /// the registry does not have (a typo would leave readiness failing for ever).
    pub fn check(&self) -> Result<(), crate::Error> {
        match &self.rules.group {
            Some(group) if self.registry.group(group).is_none() => {
                Err(crate::Error::unknown_group(group))
            }
            _ => Ok(()),
        }
    }

    /// The registry these probes read.
    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The group readiness is bound to, if any.
    #[must_use]
    pub fn group(&self) -> Option<&str> {
        self.rules.group.as_deref()
    }

    /// These probes, without keeping the registry alive.
    #[must_use]
    pub fn downgrade(&self) -> WeakProbes {
        WeakProbes {
            registry: self.registry.downgrade(),
            rules: self.rules.clone(),
        }
    }

    /// Liveness: the process serves. Never depends on dependencies or holds, but one: an
    /// instance that culled itself is not live (its hold), so that its orchestrator replaces
    /// it. A shutdown in progress is live.
    ///
    /// # Errors
    ///
    /// The culler's hold, when the instance culled itself.
    pub fn live(&self) -> Result<(), RotationHold> {
        self.registry.cull_hold().map_or(Ok(()), Err)
    }

    /// Readiness: the bound group's or the system's (`strict`: anything but OK fails), then
    /// the excuse, if any.
    #[must_use]
    pub fn ready(&self, strict: bool) -> Readiness {
        let own = match &self.rules.group {
            Some(group) => self
                .registry
                .group_readiness(group, strict)
                .unwrap_or_else(|| missing_group(group)),
            None => self.registry.readiness_strict(strict),
        };
        self.excused(own)
    }

    /// Readiness judged on `report` (a report with dependencies left out, say), then the
    /// excuse, if any. A bound group answers by its own rule, whatever the report.
    #[must_use]
    pub fn ready_of(&self, report: &SystemReport, strict: bool) -> Readiness {
        if self.rules.group.is_some() {
            return self.ready(strict);
        }
        self.excused(self.registry.readiness_of(report, strict))
    }

    /// `own` judged again by the excuse, if any.
    fn excused(&self, own: Readiness) -> Readiness {
        match &self.rules.excuse {
            Some(excuse) => excuse.judge(own),
            None => own,
        }
    }

    /// What a balancer reads of the instance (`/healthcheck/summary`, gRPC's `""`): out of
    /// rotation while any hold is in force, else in rotation with the system's condition.
    /// Whether that condition serves is the registry's [`ServePolicy`](crate::ServePolicy):
    /// see [`serving`](Self::serving).
    #[must_use]
    pub fn verdict(&self) -> crate::Verdict {
        let report = self.registry.report();
        let drain = self.registry.drain_state();
        report.summary().draining(drain.as_ref()).verdict()
    }

    /// Whether a balancer should send the instance traffic: in rotation, at a level the
    /// registry's [`ServePolicy`](crate::ServePolicy) serves. `/healthcheck/summary` answers a
    /// success code exactly when this holds, and gRPC's `""` SERVING.
    #[must_use]
    pub fn serving(&self) -> bool {
        let policy = self.registry.serve_policy();
        matches!(self.verdict(), crate::Verdict::Serving(level) if policy.serves(level))
    }

    /// Startup: every polled dependency has been checked once.
    #[must_use]
    pub fn startup(&self) -> Startup {
        self.registry.startup()
    }

    /// Whether startup is complete, without building the list of what is pending.
    #[must_use]
    pub fn started(&self) -> bool {
        self.registry.startup_complete()
    }
}

/// The readiness of a bound group that does not exist: not ready, and why.
fn missing_group(group: &str) -> Readiness {
    Readiness::judge(CheckStatus::Outage, false, true, None, || {
        vec![format!(
            "readiness is bound to the group {group}, which does not exist"
        )]
    })
}
