//! The fleet: every instance's summary, grouped by data center, and the rule GSLB asks by.
//!
//! Pure: the model is told the instances' last summaries and the time. Each instance
//! publishes its own ([`InstanceSummary`]) and reads the others' through a store (with the
//! `redis` feature, [`RedisFleet`]); [`FleetView::new`] folds them:
//!
//! - an instance is **fresh** while its last heartbeat is younger than the store's TTL, and
//!   **stale** after (its last summary is kept, marked, and does not count);
//! - a data center is **healthy** when at least [`HealthRule::healthy_share`] (default 50 %)
//!   of its fresh instances are in rotation and not OUTAGE; with no fresh instance, it is not;
//! - when **every** data center is unhealthy, every one answers healthy with `failOpen`:
//!   some work beats none (Indeed's "failing open").

#[cfg(feature = "redis")]
mod redis;

#[cfg(feature = "redis")]
pub use self::redis::{Fleet, Member, RedisFleet};

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::CheckStatus;

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

/// One data center.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DatacenterView {
    /// `OK` when healthy (or failing open), `OUTAGE` when not: the field a balancer reads
    /// first, as in the instance's summary.
    pub condition: CheckStatus,
    /// Its name.
    pub datacenter: String,
    /// Whether it is healthy by the rule.
    pub healthy: bool,
    /// Whether every data center is unhealthy, so this one answers healthy anyway.
    pub fail_open: bool,
    /// Whether the fleet view is older than it should be (the store is unreachable).
    pub stale: bool,
    /// Fresh instances serving.
    pub serving: usize,
    /// Fresh instances.
    pub fresh: usize,
    /// Its instances, fresh and stale.
    pub instances: Vec<InstanceView>,
}

impl DatacenterView {
    /// Whether GSLB should send it traffic: healthy, or every data center failing.
    #[must_use]
    pub fn answers_healthy(&self) -> bool {
        self.healthy || self.fail_open
    }
}

/// The fleet at one moment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FleetView {
    /// Whether every data center is unhealthy (each then answers healthy).
    pub fail_open: bool,
    /// Whether this view is older than it should be: the store could not be read lately.
    pub stale: bool,
    /// The data centers, by name.
    pub datacenters: Vec<DatacenterView>,
}

impl FleetView {
    /// Folds `summaries` (each with its age) by `rule`, an instance counting as fresh while
    /// younger than `ttl`.
    #[must_use]
    pub fn new(
        summaries: Vec<(InstanceSummary, Duration)>,
        ttl: Duration,
        rule: HealthRule,
    ) -> Self {
        let mut by_dc: BTreeMap<String, Vec<InstanceView>> = BTreeMap::new();
        for (summary, age) in summaries {
            by_dc
                .entry(summary.datacenter.clone())
                .or_default()
                .push(InstanceView {
                    summary,
                    age_ms: u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
                    stale: age >= ttl,
                });
        }
        let mut datacenters: Vec<DatacenterView> = by_dc
            .into_iter()
            .map(|(datacenter, mut instances)| {
                instances.sort_by(|a, b| a.summary.instance_id.cmp(&b.summary.instance_id));
                let fresh = instances.iter().filter(|i| !i.stale).count();
                let serving = instances
                    .iter()
                    .filter(|i| !i.stale && i.summary.serving())
                    .count();
                let healthy = fresh > 0 && serving as f64 >= rule.healthy_share * fresh as f64;
                DatacenterView {
                    condition: CheckStatus::Ok,
                    datacenter,
                    healthy,
                    fail_open: false,
                    stale: false,
                    serving,
                    fresh,
                    instances,
                }
            })
            .collect();
        let fail_open = !datacenters.is_empty() && datacenters.iter().all(|d| !d.healthy);
        for dc in &mut datacenters {
            dc.fail_open = fail_open;
            dc.condition = if dc.answers_healthy() {
                CheckStatus::Ok
            } else {
                CheckStatus::Outage
            };
        }
        Self {
            fail_open,
            stale: false,
            datacenters,
        }
    }

    /// The data center named `name`.
    #[must_use]
    pub fn datacenter(&self, name: &str) -> Option<&DatacenterView> {
        self.datacenters.iter().find(|d| d.datacenter == name)
    }

    /// This view marked stale: the store could not be read since it was made.
    #[must_use]
    pub fn into_stale(mut self) -> Self {
        self.stale = true;
        for dc in &mut self.datacenters {
            dc.stale = true;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(3);

    fn instance(id: &str, dc: &str, condition: CheckStatus, held: bool) -> InstanceSummary {
        let holds = if held {
            vec!["operator".to_owned()]
        } else {
            Vec::new()
        };
        InstanceSummary::new(id, dc, condition, holds, "1.0")
    }

    fn view(instances: &[(InstanceSummary, u64)]) -> FleetView {
        FleetView::new(
            instances
                .iter()
                .map(|(s, age)| (s.clone(), Duration::from_secs(*age)))
                .collect(),
            TTL,
            HealthRule::default(),
        )
    }

    #[test]
    fn a_datacenter_is_healthy_while_half_its_fresh_instances_serve() {
        let fleet = view(&[
            (instance("a1", "east", CheckStatus::Ok, false), 0),
            (instance("a2", "east", CheckStatus::Outage, false), 0),
            (instance("b1", "west", CheckStatus::Major, true), 0),
            (instance("b2", "west", CheckStatus::Outage, false), 1),
            (instance("b3", "west", CheckStatus::Ok, false), 9), // stale: does not count
        ]);
        let east = fleet.datacenter("east").unwrap();
        assert!(east.healthy && !east.fail_open);
        assert_eq!(
            (east.serving, east.fresh, east.condition),
            (1, 2, CheckStatus::Ok)
        );
        let west = fleet.datacenter("west").unwrap();
        assert!(!west.healthy && !west.answers_healthy());
        assert_eq!((west.serving, west.fresh), (0, 2));
        assert_eq!(west.condition, CheckStatus::Outage);
        assert!(west
            .instances
            .iter()
            .any(|i| i.stale && i.summary.instance_id == "b3"));
        assert!(fleet.datacenter("north").is_none());
    }

    #[test]
    fn when_every_datacenter_is_unhealthy_every_one_fails_open() {
        let fleet = view(&[
            (instance("a1", "east", CheckStatus::Outage, false), 0),
            (instance("b1", "west", CheckStatus::Ok, true), 0),
        ]);
        assert!(fleet.fail_open);
        for dc in &fleet.datacenters {
            assert!(!dc.healthy && dc.fail_open && dc.answers_healthy());
            assert_eq!(dc.condition, CheckStatus::Ok);
        }
        // Only stale instances: unhealthy too.
        let fleet = view(&[(instance("a1", "east", CheckStatus::Ok, false), 5)]);
        assert!(fleet.fail_open);
    }

    #[test]
    fn the_condition_comes_first_in_json() {
        let fleet = view(&[(instance("a1", "east", CheckStatus::Ok, false), 0)]).into_stale();
        let json = serde_json::to_string(fleet.datacenter("east").unwrap()).unwrap();
        assert!(json.starts_with(r#"{"condition":"OK","datacenter":"east","healthy":true,"failOpen":false,"stale":true"#), "{json}");
        assert!(json.contains(r#""instanceId":"a1""#), "{json}");
    }
}
