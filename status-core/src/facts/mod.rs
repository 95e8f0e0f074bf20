//! [`Facts`]: what is true of the registry, computed once per report generation and read by
//! every consumer (the status page, incidents, notifications, the fleet's beat, OTLP, the
//! dashboard, the group routes), so that none derives membership, weight, mutes,
//! maintenance or the serving verdict its own way, and no two of them disagree.

use std::sync::Arc;

use crate::{
    CheckResult, CheckStatus, DependencyId, DrainState, Group, GroupState, SystemReport, Verdict,
};

mod policy;

pub use self::policy::ServePolicy;

/// What is true of the registry at one report generation: each dependency's level, impact,
/// mute, maintenance and groups; each group's members, level, readiness and maintenance; the
/// system's level and its verdict under the registry's [`ServePolicy`].
///
/// Built by [`Registry::facts`](crate::Registry::facts) once per report and rotation
/// generation and shared (`Arc`) by everyone who asks for the same one.
///
/// **Maintenance** is root-aware: a dependency is in maintenance when it is muted, or when it
/// fails and every root cause of its failure (`blockedBy`) is muted. A group or the system is
/// in maintenance when it fails and each member failing is. Probes never read it: they
/// answer the true condition whatever is muted.
///
/// # Example
///
/// ```
/// use status_core::{check, CheckStatus, Dependency, MuteWindow, Registry};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), status_core::Error> {
/// let registry = Registry::new();
/// let down = || check::ping(|| async { Err::<(), _>(std::io::Error::other("down")) });
/// registry.add(Dependency::builder("db", down()).build()?)?;
/// registry.add(Dependency::builder("search", down()).depends_on("db").build()?)?;
/// registry.mute("db", MuteWindow::For(std::time::Duration::from_secs(3600)), "upgrade", None)?;
/// registry.refresh_all().await;
///
/// let facts = registry.facts();
/// let search = facts.dependency("search").unwrap();
/// assert!(!search.muted());
/// assert!(search.maintenance()); // it fails only through db, which is muted
/// assert!(facts.maintenance());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Facts {
    generation: u64,
    report: Arc<SystemReport>,
    /// Sorted by id.
    dependencies: Vec<DependencyFacts>,
    groups: Vec<GroupFacts>,
    policy: ServePolicy,
    drain: Option<DrainState>,
    maintenance: bool,
}

/// One dependency's facts.
#[derive(Debug, Clone)]
pub struct DependencyFacts {
    result: Arc<CheckResult>,
    impact: CheckStatus,
    muted: bool,
    maintenance: bool,
    groups: u64,
}

/// One group's facts.
#[derive(Debug, Clone)]
pub struct GroupFacts {
    state: GroupState,
    members: Vec<DependencyId>,
    ready: bool,
    maintenance: bool,
}

/// What [`Facts::build`] is told, read by the engine under one report generation.
pub(crate) struct Sources {
    pub(crate) generation: u64,
    pub(crate) report: Arc<SystemReport>,
    /// Each result's group bits, in the report's order, from the folds.
    pub(crate) bits: Vec<u64>,
    /// Each registered group with whether its members have all been checked once.
    pub(crate) groups: Vec<(Group, bool)>,
    pub(crate) policy: ServePolicy,
    pub(crate) drain: Option<DrainState>,
}

impl Facts {
    pub(crate) fn build(sources: Sources) -> Self {
        let Sources {
            generation,
            report,
            bits,
            groups,
            policy,
            drain,
        } = sources;
        let muted = |r: &CheckResult| r.mute().is_some();
        let is_muted: std::collections::HashSet<&str> = report
            .results()
            .iter()
            .filter(|r| muted(r))
            .map(|r| r.id().as_str())
            .collect();
        let mut dependencies: Vec<DependencyFacts> = report
            .results()
            .iter()
            .zip(bits.iter().copied().chain(std::iter::repeat(0)))
            .map(|(r, groups)| {
                let causes = r.blocked_by();
                let maintenance = muted(r)
                    || (r.status() != CheckStatus::Ok
                        && !causes.is_empty()
                        && causes.iter().all(|c| is_muted.contains(c.as_str())));
                DependencyFacts {
                    impact: r.urgency().cap(r.status()),
                    muted: muted(r),
                    maintenance,
                    groups,
                    result: Arc::clone(r),
                }
            })
            .collect();
        dependencies.sort_by(|a, b| a.id().cmp(b.id()));
        let groups = groups
            .into_iter()
            .enumerate()
            .map(|(i, (group, startup_complete))| {
                let members: Vec<&DependencyFacts> = dependencies
                    .iter()
                    .filter(|d| d.groups & (1 << i) != 0)
                    .collect();
                let level = members
                    .iter()
                    .map(|d| d.impact)
                    .max()
                    .unwrap_or(CheckStatus::Ok);
                let state = GroupState::new(group, level, startup_complete, members.len());
                let group = state.group();
                let held = group.rotation() && drain.is_some();
                let waiting = group.startup() && !startup_complete;
                let ready = !(group.fails(level) || waiting || held);
                GroupFacts {
                    maintenance: in_maintenance(level, &members),
                    members: members.iter().map(|d| d.id().clone()).collect(),
                    ready,
                    state,
                }
            })
            .collect();
        let all: Vec<&DependencyFacts> = dependencies.iter().collect();
        Self {
            maintenance: in_maintenance(report.condition(), &all),
            generation,
            report,
            dependencies,
            groups,
            policy,
            drain,
        }
    }

    /// Which build this is: a later one has a greater generation.
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The report these facts were computed from.
    #[must_use]
    pub fn report(&self) -> &Arc<SystemReport> {
        &self.report
    }

    /// The system's level: the fold of every dependency's impact.
    #[must_use]
    pub fn level(&self) -> CheckStatus {
        self.report.condition()
    }

    /// The policy the verdict is judged under.
    #[must_use]
    pub fn policy(&self) -> ServePolicy {
        self.policy
    }

    /// What a balancer reads of the instance: out of rotation while a hold is in force, else
    /// in rotation at its level.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        if self.drain.is_some() {
            Verdict::OutOfRotation
        } else {
            Verdict::Serving(self.level())
        }
    }

    /// Whether the instance serves: in rotation, at a level the policy serves.
    #[must_use]
    pub fn serving(&self) -> bool {
        matches!(self.verdict(), Verdict::Serving(level) if self.policy.serves(level))
    }

    /// The holds in force, if any.
    #[must_use]
    pub fn drain(&self) -> Option<&DrainState> {
        self.drain.as_ref()
    }

    /// Whether the system fails and each dependency failing is in maintenance: a planned
    /// maintenance, which tells no notice and opens no incident.
    #[must_use]
    pub fn maintenance(&self) -> bool {
        self.maintenance
    }

    /// Every dependency, by id.
    #[must_use]
    pub fn dependencies(&self) -> &[DependencyFacts] {
        &self.dependencies
    }

    /// The dependency `id`.
    #[must_use]
    pub fn dependency(&self, id: &str) -> Option<&DependencyFacts> {
        self.dependencies
            .binary_search_by(|d| d.id().as_str().cmp(id))
            .ok()
            .map(|i| &self.dependencies[i])
    }

    /// Every group, in the order registered.
    #[must_use]
    pub fn groups(&self) -> &[GroupFacts] {
        &self.groups
    }

    /// The group `name`.
    #[must_use]
    pub fn group(&self, name: &str) -> Option<&GroupFacts> {
        self.groups
            .iter()
            .find(|g| g.state.group().name().as_str() == name)
    }

    /// The groups `dependency` belongs to, in the order registered.
    pub fn groups_of<'a>(
        &'a self,
        dependency: &'a DependencyFacts,
    ) -> impl Iterator<Item = &'a GroupFacts> + 'a {
        self.groups
            .iter()
            .enumerate()
            .filter(move |(i, _)| dependency.groups & (1 << i) != 0)
            .map(|(_, g)| g)
    }
}

/// Whether something at `level` made of `members` is under maintenance: it fails, and each
/// member failing is.
fn in_maintenance(level: CheckStatus, members: &[&DependencyFacts]) -> bool {
    let mut failing = members
        .iter()
        .filter(|d| d.level() != CheckStatus::Ok)
        .peekable();
    level != CheckStatus::Ok && failing.peek().is_some() && failing.all(|d| d.maintenance)
}

impl DependencyFacts {
    /// Its id.
    #[must_use]
    pub fn id(&self) -> &DependencyId {
        self.result.id()
    }

    /// Its result, as the report holds it.
    #[must_use]
    pub fn result(&self) -> &Arc<CheckResult> {
        &self.result
    }

    /// Its level.
    #[must_use]
    pub fn level(&self) -> CheckStatus {
        self.result.status()
    }

    /// Its weight in the system: its level capped by its urgency.
    #[must_use]
    pub fn impact(&self) -> CheckStatus {
        self.impact
    }

    /// Whether a mute is in force on it (set now, or a window that has started).
    #[must_use]
    pub fn muted(&self) -> bool {
        self.muted
    }

    /// Whether it is under maintenance: muted, or failing only through muted root causes.
    #[must_use]
    pub fn maintenance(&self) -> bool {
        self.maintenance
    }

    /// The root causes its failure is attributed to (`blockedBy`).
    #[must_use]
    pub fn blocked_by(&self) -> &[DependencyId] {
        self.result.blocked_by()
    }
}

impl GroupFacts {
    /// The group as it stands in these facts: definition, level, startup, member count.
    #[must_use]
    pub fn state(&self) -> &GroupState {
        &self.state
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.state.group().name().as_str()
    }

    /// Its members, by id.
    #[must_use]
    pub fn members(&self) -> &[DependencyId] {
        &self.members
    }

    /// Its level: the worst impact of its members (OK without any).
    #[must_use]
    pub fn level(&self) -> CheckStatus {
        self.state.condition()
    }

    /// Whether it passes by its rule: its level, its startup and its holds, as it counts
    /// them (not strict).
    #[must_use]
    pub fn ready(&self) -> bool {
        self.ready
    }

    /// Whether it fails and each member failing is under maintenance.
    #[must_use]
    pub fn maintenance(&self) -> bool {
        self.maintenance
    }
}
