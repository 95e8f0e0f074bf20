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
        }
    }

    /// Whether it counts for its data center: in rotation and not OUTAGE.
    #[must_use]
    pub fn serving(&self) -> bool {
        self.holds.is_empty() && self.condition != CheckStatus::Outage
    }
}

/// When a data center is healthy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthRule {
    /// The share of a data center's fresh instances that must be serving.
    pub healthy_share: f64,
}

impl Default for HealthRule {
    fn default() -> Self {
        Self { healthy_share: 0.5 }
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

/// What the store counted of one data center: its fresh instances by condition, and those of
/// them serving (in rotation and not OUTAGE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatacenterCounts {
    /// Its name.
    pub datacenter: String,
    /// Its fresh instances, by condition.
    pub conditions: Conditions,
    /// Of them, those serving.
    pub serving: usize,
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
