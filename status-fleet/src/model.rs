//! What instances publish and the store counts: summaries, the health rule, counts by
//! condition, pages of instances.

use serde::{Deserialize, Serialize};
use status_core::CheckStatus;

/// What an instance publishes of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InstanceSummary {
    /// The instance's name, unique in the fleet.
    pub instance_id: String,
    /// Its data center.
    pub datacenter: String,
    /// Its system condition.
    pub condition: CheckStatus,
    /// The sources of the rotation holds in force (`operator`, `shutdown`, `cull`).
    pub holds: Vec<String>,
    /// Its version.
    pub version: String,
    /// Where its dashboard is, if it says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// Its failing dependencies that weigh on its condition, the worst first, at most
    /// [`MAX_FAILING`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<FailingDependency>,
}

/// The most failing dependencies one instance publishes, and any store counts of it.
pub const MAX_FAILING: usize = 32;

/// One of an instance's failing dependencies, as it publishes it: `{"id": "primary-db",
/// "level": "OUTAGE"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FailingDependency {
    /// The dependency's id (a status-core id: `[a-z0-9][a-z0-9._-]*`, at most 128 bytes).
    pub id: String,
    /// Its status: MINOR, MAJOR or OUTAGE.
    pub level: CheckStatus,
}

impl FailingDependency {
    /// `id` failing at `level`.
    #[must_use]
    pub fn new(id: impl Into<String>, level: CheckStatus) -> Self {
        Self {
            id: id.into(),
            level,
        }
    }

    /// Whether a store may count it: a valid id and a failing level.
    #[must_use]
    pub fn valid(&self) -> bool {
        self.level != CheckStatus::Ok && status_core::DependencyId::new(&self.id).is_ok()
    }
}

/// `failing` as a store counts it: the valid entries, each dependency once at its worst
/// level, at most [`MAX_FAILING`]; and whether anything was dropped (garbage, duplicates or
/// entries past the cap), which a store counts as `bad_failing`.
#[must_use]
pub fn counted_failing(failing: &[FailingDependency]) -> (Vec<FailingDependency>, bool) {
    let mut kept: Vec<FailingDependency> = Vec::new();
    let mut dropped = failing.len() > MAX_FAILING;
    for entry in failing.iter().take(MAX_FAILING) {
        if !entry.valid() {
            dropped = true;
            continue;
        }
        match kept.iter_mut().find(|k| k.id == entry.id) {
            Some(k) => {
                dropped = true;
                k.level = k.level.max(entry.level);
            }
            None => kept.push(entry.clone()),
        }
    }
    (kept, dropped)
}

impl InstanceSummary {
    /// A summary.
    #[must_use]
    pub fn new(
        instance_id: impl Into<String>,
        datacenter: impl Into<String>,
        condition: CheckStatus,
        holds: Vec<String>,
        version: impl Into<String>,
    ) -> Self {
        Self {
            instance_id: instance_id.into(),
            datacenter: datacenter.into(),
            condition,
            holds,
            version: version.into(),
            url: String::new(),
            failing: Vec::new(),
        }
    }

    /// The same, failing `failing` (the worst first; a store keeps the first
    /// [`MAX_FAILING`]).
    #[must_use]
    pub fn with_failing(mut self, failing: Vec<FailingDependency>) -> Self {
        self.failing = failing;
        self
    }

    /// Whether it counts for its data center: in rotation and not OUTAGE.
    #[must_use]
    pub fn serving(&self) -> bool {
        self.holds.is_empty() && self.condition != CheckStatus::Outage
    }
}

/// A data center's fresh instances, by condition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub struct Conditions {
    /// OK.
    pub ok: usize,
    /// MINOR.
    pub minor: usize,
    /// MAJOR.
    pub major: usize,
    /// OUTAGE.
    pub outage: usize,
}

impl Conditions {
    /// Every fresh instance.
    #[must_use]
    pub fn total(&self) -> usize {
        self.ok + self.minor + self.major + self.outage
    }

    /// The fresh instances no better than `condition`.
    #[must_use]
    pub fn no_better_than(&self, condition: CheckStatus) -> usize {
        match condition {
            CheckStatus::Ok => self.total(),
            CheckStatus::Minor => self.minor + self.major + self.outage,
            CheckStatus::Major => self.major + self.outage,
            CheckStatus::Outage => self.outage,
        }
    }

    /// One more instance of `condition`.
    pub fn add(&mut self, condition: CheckStatus) {
        match condition {
            CheckStatus::Ok => self.ok += 1,
            CheckStatus::Minor => self.minor += 1,
            CheckStatus::Major => self.major += 1,
            CheckStatus::Outage => self.outage += 1,
        }
    }
}

/// What the store counted of one data center: its fresh instances by condition, those of
/// them serving (in rotation and not OUTAGE), and its fresh instances by failing dependency
/// and level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatacenterCounts {
    /// Its name.
    pub datacenter: String,
    /// Its fresh instances, by condition.
    pub conditions: Conditions,
    /// Of them, those serving.
    pub serving: usize,
    /// Of them, those failing each dependency, by level (exactly that level); by dependency,
    /// then level.
    pub failing: Vec<DependencyCount>,
}

impl DatacenterCounts {
    /// A data center's counts, no dependency failing.
    #[must_use]
    pub fn new(datacenter: impl Into<String>, conditions: Conditions, serving: usize) -> Self {
        Self {
            datacenter: datacenter.into(),
            conditions,
            serving,
            failing: Vec::new(),
        }
    }

    /// Drops what no store could have counted: a row with a bad id or level, a count above
    /// the data center's fresh instances, rows past [`MAX_FAILING_ROWS`]; answers how many
    /// went (counted as `forged_count`). Such a row is never trusted to excuse anyone.
    pub fn sanitize(&mut self) -> u64 {
        let fresh = self.conditions.total();
        let before = self.failing.len();
        self.failing.retain(|c| {
            c.instances > 0
                && c.instances <= fresh
                && c.level != CheckStatus::Ok
                && status_core::DependencyId::new(&c.dependency).is_ok()
        });
        self.failing.sort_by(|a, b| {
            (a.dependency.as_str(), a.level).cmp(&(b.dependency.as_str(), b.level))
        });
        self.failing
            .dedup_by(|a, b| a.dependency == b.dependency && a.level == b.level);
        // A dependency failing on more instances, over its levels, than are fresh: forged.
        let mut over = std::collections::BTreeSet::new();
        for chunk in self.failing.chunk_by(|a, b| a.dependency == b.dependency) {
            if chunk.iter().map(|c| c.instances).sum::<usize>() > fresh {
                over.insert(chunk[0].dependency.clone());
            }
        }
        self.failing.retain(|c| !over.contains(&c.dependency));
        self.failing.truncate(MAX_FAILING_ROWS);
        (before - self.failing.len()) as u64
    }
}

/// One of this instance's own failing dependencies: as it publishes it, and what it weighs
/// on its condition (its urgency's cap of its level), which fleet-aware readiness asks of the
/// failures it cannot excuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnFailure {
    /// As published.
    pub dependency: FailingDependency,
    /// What it weighs on the instance's condition.
    pub impact: CheckStatus,
}

/// This instance as the store counts it (its last beat): so that rules about "the others"
/// can leave it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Own {
    /// Its data center.
    pub datacenter: String,
    /// Its condition, as published.
    pub condition: CheckStatus,
    /// Its failing dependencies, as published, each with its weight.
    pub failing: Vec<OwnFailure>,
}

/// The most rows of failing dependencies kept for one data center.
pub const MAX_FAILING_ROWS: usize = 1024;

/// How many fresh instances of a data center fail one dependency at one level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DependencyCount {
    /// The dependency's id.
    pub dependency: String,
    /// The level.
    pub level: CheckStatus,
    /// Fresh instances failing it at exactly that level.
    pub instances: usize,
}

/// Which instances to list: of one data center or all, after a cursor, at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceQuery {
    /// Only this data center's.
    pub datacenter: Option<String>,
    /// After this cursor (a previous page's [`InstancePage::next_cursor`]).
    pub cursor: Option<String>,
    /// At most this many (the store caps it; 500 for Redis).
    pub limit: usize,
    /// The worst first, where the store keeps instances by condition (Redis: in each data
    /// center OUTAGE first, then MAJOR, MINOR, OK; the data centers in the reverse of the
    /// order the store first saw them): for an operator, the instances in trouble on the
    /// first page. Other stores list in their own order.
    pub worst_first: bool,
}

impl InstanceQuery {
    /// Whether it asks for the instances of `datacenter` (it names none, or that one).
    #[must_use]
    pub fn wants(&self, datacenter: &str) -> bool {
        self.datacenter
            .as_deref()
            .is_none_or(|name| name == datacenter)
    }
}

/// A page of instances, and the cursor of the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstancePage {
    /// The instances, fresh and stale, by data center.
    pub instances: Vec<InstanceView>,
    /// Where the next page starts; `None` on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One instance as the fleet sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InstanceView {
    /// Its last summary.
    #[serde(flatten)]
    pub summary: InstanceSummary,
    /// How long ago it was published, in milliseconds.
    pub age_ms: u64,
    /// Whether it is older than the TTL.
    pub stale: bool,
}

/// This instance in the fleet: who it is, where, and how to reach its dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Unique in the fleet.
    pub instance_id: String,
    /// Its data center.
    pub datacenter: String,
    /// Its version.
    pub version: String,
    /// Its dashboard's URL, if known.
    pub url: String,
}
