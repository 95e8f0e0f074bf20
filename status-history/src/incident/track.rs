//! [`IncidentTracker`]: when an incident opens, what it covers, when it resolves. Pure: told
//! the time and what the registry says, it answers what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use status_core::{CheckStatus, Urgency};

use super::{Impact, IncidentFact, Phase};

/// How long everything an incident covers must stay healthy before it resolves: 5 minutes.
pub const DEFAULT_QUIET: Duration = Duration::from_secs(300);

/// The most incidents a root cause opens in an hour: past it, a new failure of the same root
/// reopens its latest incident rather than open one more (a flapping dependency is one
/// incident that keeps reopening, not a page of them).
pub const MAX_INCIDENTS_PER_HOUR: usize = 3;

/// An hour, in ms.
const HOUR: i64 = 3_600_000;

/// How often an open incident is said again though nothing changed (ms): a fleet's store
/// then knows the instance is still there (see [`GONE_AFTER`](super::GONE_AFTER)).
pub const REAFFIRM_EVERY: i64 = 60_000;

/// One dependency as the registry reports it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SceneDependency {
    /// Its id.
    pub id: String,
    /// Its level.
    pub status: CheckStatus,
    /// Its urgency.
    pub urgency: Urgency,
    /// The root causes its failure is attributed to (`blockedBy`), empty when it is its own.
    pub blocked_by: Vec<String>,
    /// Whether it belongs to a group whose rule fails now.
    pub in_failing_group: bool,
    /// Its weight in the system: its level capped by its urgency
    /// ([`DependencyFacts::impact`](status_core::DependencyFacts::impact)).
    pub impact: CheckStatus,
    /// Whether it is under maintenance: muted, or failing only through muted root causes
    /// ([`DependencyFacts::maintenance`](status_core::DependencyFacts::maintenance)). It opens
    /// no incident, though one opened for its root lists it.
    pub maintenance: bool,
}

/// What the registry says now: each dependency, and whether the system fails its rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scene {
    /// Every dependency.
    pub dependencies: Vec<SceneDependency>,
    /// Whether the system's level fails readiness by itself (OUTAGE).
    pub system_failing: bool,
}

impl SceneDependency {
    /// Whether its level opens an incident: a Required or Strong dependency at MAJOR or
    /// worse, or any dependency that counts and is not OK while the system or one of its
    /// groups fails.
    fn triggers(&self) -> bool {
        if self.status == CheckStatus::Ok || self.maintenance {
            return false;
        }
        let strong = matches!(self.urgency, Urgency::Required | Urgency::Strong);
        (strong && self.status >= CheckStatus::Major) || self.in_failing_group
    }

    fn roots(&self) -> BTreeSet<String> {
        if self.blocked_by.is_empty() {
            BTreeSet::from([self.id.clone()])
        } else {
            self.blocked_by.iter().cloned().collect()
        }
    }

    fn impact(&self) -> Impact {
        match self.impact {
            CheckStatus::Ok => Impact::None,
            CheckStatus::Minor => Impact::Minor,
            CheckStatus::Major => Impact::Major,
            CheckStatus::Outage => Impact::Critical,
        }
    }
}

#[derive(Debug, Clone)]
struct Tracked {
    roots: BTreeSet<String>,
    affected: BTreeMap<String, CheckStatus>,
    impact: Impact,
    started: i64,
    /// Since when nothing it covers fails, while that holds.
    clear_since: Option<i64>,
    resolved: Option<i64>,
    /// When it was found resolved (the quiet time after `resolved`): the time it may
    /// reopen is counted from here.
    declared: Option<i64>,
    /// What was last said of it, to say only changes (and, while open, again every minute).
    said: Option<IncidentFact>,
}

impl Tracked {
    fn fact(&self, at: i64) -> IncidentFact {
        IncidentFact {
            roots: self.roots.iter().cloned().collect(),
            affected: self.affected.clone(),
            impact: self.impact,
            started: self.started,
            at,
            phase: self
                .resolved
                .map_or(Phase::Open, |at| Phase::Resolved { at }),
        }
    }
}

/// Decides incidents from what the registry says.
///
/// - **Opens** one when a Required or Strong dependency reaches MAJOR, or a dependency
///   that counts fails while the system (OUTAGE) or one of its groups fails its rule; a
///   muted one opens none.
/// - **Keys** it by root causes (`blockedBy`): a failing database and the dependencies it
///   blocks are one incident, which lists them all as affected (any level, any urgency).
/// - **Resolves** it once everything it covers has been OK for the quiet time, dated when
///   they recovered; a failure within the quiet time keeps it open, and one within the
///   quiet time after it resolved reopens it.
/// - **Bounds** them: a root cause opens at most [`MAX_INCIDENTS_PER_HOUR`] in an hour; past
///   that, its next failure reopens its latest incident (a flapping dependency is one incident
///   that reopens, not one more each time it fails after the quiet time).
///
/// ```
/// use status_core::{CheckStatus, Urgency};
/// use status_history::incident::{IncidentTracker, Phase, Scene, SceneDependency};
///
/// let mut tracker = IncidentTracker::new(std::time::Duration::from_secs(300));
/// let dep = |id: &str, status, blocked_by: &[&str]| SceneDependency {
///     id: id.into(),
///     status,
///     urgency: Urgency::Required,
///     blocked_by: blocked_by.iter().map(|s| s.to_string()).collect(),
///     in_failing_group: false,
///     impact: status,
///     maintenance: false,
/// };
/// let down = Scene {
///     dependencies: vec![dep("db", CheckStatus::Outage, &[]), dep("api", CheckStatus::Major, &["db"])],
///     system_failing: true,
/// };
/// let facts = tracker.observe(0, &down);
/// assert_eq!(facts.len(), 1, "one incident, keyed by the root");
/// assert_eq!(facts[0].roots, ["db"]);
/// assert_eq!(facts[0].affected.len(), 2);
///
/// let up = Scene {
///     dependencies: vec![dep("db", CheckStatus::Ok, &[]), dep("api", CheckStatus::Ok, &[])],
///     system_failing: false,
/// };
/// assert!(tracker.observe(30_000, &up).is_empty(), "quiet for less than 5 minutes");
/// let facts = tracker.observe(330_000, &up);
/// assert_eq!(facts[0].phase, Phase::Resolved { at: 30_000 });
/// ```
#[derive(Debug, Clone)]
pub struct IncidentTracker {
    quiet: i64,
    incidents: Vec<Tracked>,
}

impl Default for IncidentTracker {
    fn default() -> Self {
        Self::new(DEFAULT_QUIET)
    }
}

impl IncidentTracker {
    /// A tracker resolving incidents after `quiet` of health.
    #[must_use]
    pub fn new(quiet: Duration) -> Self {
        Self {
            quiet: i64::try_from(quiet.as_millis()).unwrap_or(i64::MAX),
            incidents: Vec::new(),
        }
    }

    /// The quiet time, in ms.
    #[must_use]
    pub fn quiet_ms(&self) -> i64 {
        self.quiet
    }

    /// How many incidents it sees open.
    #[must_use]
    pub fn open(&self) -> usize {
        self.incidents
            .iter()
            .filter(|t| t.resolved.is_none())
            .count()
    }

    /// Takes back the incidents a store kept open across a restart, so that they resolve
    /// (or go on) rather than open again.
    pub fn restore(&mut self, open: impl IntoIterator<Item = IncidentFact>) {
        for fact in open {
            if fact.phase != Phase::Open
                || self
                    .incidents
                    .iter()
                    .any(|t| fact.roots.iter().any(|r| t.roots.contains(r)))
            {
                continue;
            }
            let tracked = Tracked {
                roots: fact.roots.iter().cloned().collect(),
                affected: fact.affected.clone(),
                impact: fact.impact,
                started: fact.started,
                clear_since: None,
                resolved: None,
                declared: None,
                said: Some(fact),
            };
            self.incidents.push(tracked);
        }
    }

    /// Takes in what the registry says at `now` (ms); answers each incident that changed,
    /// whole.
    pub fn observe(&mut self, now: i64, scene: &Scene) -> Vec<IncidentFact> {
        // Open or join, by root cause.
        for dep in &scene.dependencies {
            let counts = dep.triggers()
                || (scene.system_failing
                    && !dep.maintenance
                    && dep.status != CheckStatus::Ok
                    && dep.urgency != Urgency::None);
            if !counts {
                continue;
            }
            let roots = dep.roots();
            let quiet = self.quiet;
            let shares = |t: &Tracked| t.roots.iter().any(|r| roots.contains(r));
            let mut found = self
                .incidents
                .iter()
                .position(|t| t.declared.is_none_or(|at| now - at < quiet) && shares(t));
            // Past its budget, a root's new failure is its latest incident's, reopened.
            let this_hour = self
                .incidents
                .iter()
                .filter(|t| now - t.started < HOUR && shares(t))
                .count();
            if found.is_none() && this_hour >= MAX_INCIDENTS_PER_HOUR {
                found = self
                    .incidents
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| shares(t))
                    .max_by_key(|(_, t)| t.started)
                    .map(|(i, _)| i);
            }
            let found = found.map(|i| &mut self.incidents[i]);
            match found {
                Some(t) => {
                    t.roots.extend(roots);
                    t.resolved = None;
                    t.declared = None;
                }
                None => self.incidents.push(Tracked {
                    roots,
                    affected: BTreeMap::new(),
                    impact: Impact::None,
                    started: now,
                    clear_since: None,
                    resolved: None,
                    declared: None,
                    said: None,
                }),
            }
        }
        // What each covers: every dependency failing for one of its roots.
        for t in self.incidents.iter_mut().filter(|t| t.resolved.is_none()) {
            let mut failing = false;
            for dep in &scene.dependencies {
                if dep.status == CheckStatus::Ok {
                    continue;
                }
                let covered =
                    t.roots.contains(&dep.id) || dep.blocked_by.iter().any(|r| t.roots.contains(r));
                if covered {
                    failing = true;
                    let worst = t.affected.entry(dep.id.clone()).or_insert(dep.status);
                    *worst = (*worst).max(dep.status);
                    t.impact = t.impact.max(dep.impact());
                }
            }
            if failing {
                t.clear_since = None;
            } else {
                let since = *t.clear_since.get_or_insert(now);
                if now - since >= self.quiet {
                    t.resolved = Some(since);
                    t.declared = Some(now);
                }
            }
        }
        let mut changed = Vec::new();
        for t in &mut self.incidents {
            let fact = t.fact(now);
            let same = t.said.as_ref().is_some_and(|said| {
                said.roots == fact.roots
                    && said.affected == fact.affected
                    && said.impact == fact.impact
                    && said.phase == fact.phase
                    && (fact.phase != Phase::Open || now - said.at < REAFFIRM_EVERY)
            });
            if !same {
                t.said = Some(fact.clone());
                changed.push(fact);
            }
        }
        // Forgotten once past the time they could reopen, and past the hour their start
        // counts against their roots' budget.
        let quiet = self.quiet;
        self.incidents
            .retain(|t| t.declared.is_none_or(|at| now - at < quiet) || now - t.started < HOUR);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(status: CheckStatus) -> Scene {
        Scene {
            dependencies: vec![SceneDependency {
                id: "db".into(),
                status,
                urgency: Urgency::Required,
                blocked_by: Vec::new(),
                in_failing_group: false,
                impact: status,
                maintenance: false,
            }],
            system_failing: status == CheckStatus::Outage,
        }
    }

    #[test]
    fn a_flapping_root_opens_at_most_three_incidents_an_hour_then_reopens_the_last() {
        let quiet = Duration::from_secs(60);
        let mut tracker = IncidentTracker::new(quiet);
        let mut opened = BTreeSet::new();
        // Down for 10 s, then up for 3 minutes (past the quiet time and past reopening), for
        // two hours: 36 flaps.
        let mut now = 0;
        for _ in 0..36 {
            for fact in tracker.observe(now, &db(CheckStatus::Outage)) {
                opened.insert(fact.started);
            }
            now += 10_000;
            tracker.observe(now, &db(CheckStatus::Ok));
            now += 90_000;
            tracker.observe(now, &db(CheckStatus::Ok));
            now += 100_000;
            tracker.observe(now, &db(CheckStatus::Ok));
        }
        // Three in the first hour, and a new budget each hour after: at most 3 an hour.
        let hours = now / HOUR + 1;
        assert!(
            opened.len() <= MAX_INCIDENTS_PER_HOUR * hours as usize,
            "{opened:?}"
        );
        assert!(opened.len() >= MAX_INCIDENTS_PER_HOUR, "{opened:?}");
        let first_hour = opened.iter().filter(|s| **s < HOUR).count();
        assert_eq!(first_hour, MAX_INCIDENTS_PER_HOUR, "{opened:?}");
        // A single failure still opens one, and a root's budget is its own.
        let mut fresh = IncidentTracker::new(quiet);
        assert_eq!(fresh.observe(0, &db(CheckStatus::Outage)).len(), 1);
    }

    #[test]
    fn an_open_incident_is_said_again_every_minute_and_a_resolved_one_is_not() {
        let mut tracker = IncidentTracker::new(Duration::from_secs(60));
        assert_eq!(tracker.observe(0, &db(CheckStatus::Outage)).len(), 1);
        assert!(tracker.observe(30_000, &db(CheckStatus::Outage)).is_empty());
        let again = tracker.observe(60_000, &db(CheckStatus::Outage));
        assert_eq!(again.len(), 1, "a minute on, said again");
        assert_eq!(again[0].phase, Phase::Open);
        assert!(tracker.observe(90_000, &db(CheckStatus::Outage)).is_empty());
        assert!(tracker.observe(100_000, &db(CheckStatus::Ok)).is_empty());
        let resolved = tracker.observe(160_000, &db(CheckStatus::Ok));
        assert_eq!(resolved[0].phase, Phase::Resolved { at: 100_000 });
        assert!(tracker.observe(200_000, &db(CheckStatus::Ok)).is_empty());
        assert_eq!(tracker.open(), 0);
    }

    #[test]
    fn a_muted_dependency_opens_nothing() {
        let mut tracker = IncidentTracker::default();
        let mut scene = db(CheckStatus::Outage);
        scene.dependencies[0].maintenance = true;
        scene.system_failing = false;
        assert!(tracker.observe(0, &scene).is_empty());
    }
}
