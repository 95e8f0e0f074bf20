//! The fleet at one moment: data centers judged by the rule, failing open together, and
//! fleet-aware readiness.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use status_core::{CheckStatus, Error};

use crate::failure::{failures_of, DependencyFailure};
use crate::{
    Conditions, DatacenterCounts, DependencyCount, HealthRule, InstancePage, InstanceQuery,
    InstanceSummary, InstanceView, Own,
};

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
    /// Whether so few of its instances serve that readiness fails open inside it (every
    /// instance stays ready; [`HealthRule::ready_fail_open_share`]).
    pub ready_fail_open: bool,
    /// Fresh instances serving.
    pub serving: usize,
    /// Fresh instances.
    pub fresh: usize,
    /// Fresh instances, by condition.
    pub conditions: Conditions,
    /// What fails across it: each dependency its fresh instances fail, at each level (the
    /// instances at that level or worse), shared failures first, then the worst.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<DependencyFailure>,
    /// The store's counts of failing dependencies, by dependency and exact level.
    #[serde(skip)]
    pub counted: Vec<DependencyCount>,
    /// Its instances, fresh and stale, when the view was folded from summaries; empty in a
    /// view folded from counts (list them with the store, a page at a time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceView>,
}

impl DatacenterView {
    /// A data center judged by `rule` on its fresh instances' conditions and its serving
    /// ones; not failing open (the fleet decides that).
    fn judged(counts: DatacenterCounts, rule: HealthRule) -> Self {
        let DatacenterCounts {
            datacenter,
            conditions,
            serving,
            failing: counted,
        } = counts;
        let fresh = conditions.total();
        let healthy = rule.healthy(serving, fresh);
        Self {
            ready_fail_open: rule.ready_fails_open(serving, fresh),
            failing: failures_of(&datacenter, &counted, fresh, rule),
            counted,
            condition: CheckStatus::Ok,
            datacenter,
            healthy,
            fail_open: false,
            stale: false,
            serving,
            fresh,
            conditions,
            instances: Vec::new(),
        }
    }

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
    /// Whether what fails holds only this instance's own rows (its failing dependencies in
    /// its data center): a store sends a fleet too large to hand the whole list to every
    /// instance no more, until someone looks at the fleet through this one
    /// ([`FleetSource::look`](crate::FleetSource::look)); the whole list comes with the next
    /// beat.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failing_partial: bool,
    /// This instance's own entry as counted (its data center, published condition and
    /// failing dependencies), so that rules about "the others" can leave it out.
    #[serde(skip)]
    pub own: Option<Own>,
    /// The rule it was judged by.
    #[serde(skip)]
    pub rule: HealthRule,
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
        let datacenters = by_dc
            .into_iter()
            .map(|(datacenter, mut instances)| {
                instances.sort_by(|a, b| a.summary.instance_id.cmp(&b.summary.instance_id));
                let mut counts = DatacenterCounts::new(datacenter, Conditions::default(), 0);
                let mut failing = std::collections::BTreeMap::new();
                for i in instances.iter().filter(|i| !i.stale) {
                    counts.conditions.add(i.summary.condition);
                    counts.serving += usize::from(i.summary.serving());
                    for f in crate::counted_failing(&i.summary.failing).0 {
                        *failing.entry((f.id, f.level)).or_insert(0) += 1;
                    }
                }
                counts.failing = failing
                    .into_iter()
                    .map(|((dependency, level), instances)| DependencyCount {
                        dependency,
                        level,
                        instances,
                    })
                    .collect();
                let mut dc = DatacenterView::judged(counts, rule);
                dc.instances = instances;
                dc
            })
            .collect();
        Self::folded(datacenters, rule)
    }

    /// Folds what the store counted of each data center by `rule`.
    #[must_use]
    pub fn from_counts(counts: Vec<DatacenterCounts>, rule: HealthRule) -> Self {
        let mut datacenters: Vec<DatacenterView> = counts
            .into_iter()
            .map(|c| DatacenterView::judged(c, rule))
            .collect();
        datacenters.sort_by(|a, b| a.datacenter.cmp(&b.datacenter));
        Self::folded(datacenters, rule)
    }

    /// The fleet of judged data centers: failing open when every one is unhealthy.
    fn folded(mut datacenters: Vec<DatacenterView>, rule: HealthRule) -> Self {
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
            failing_partial: false,
            own: None,
            rule,
        }
    }

    /// A page of the instances this view holds (those it was folded from), by data center
    /// and id (with [`InstanceQuery::worst_first`], the worst condition first); the cursor is
    /// an offset into them.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a cursor that is not an offset.
    pub fn page(&self, query: &InstanceQuery) -> Result<InstancePage, Error> {
        let from = match &query.cursor {
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| Error::invalid("invalid cursor"))?,
            None => 0,
        };
        let limit = query.limit.max(1);
        let mut all: Vec<&InstanceView> = self
            .datacenters
            .iter()
            .filter(|dc| query.wants(&dc.datacenter))
            .flat_map(|dc| dc.instances.iter())
            .collect();
        if query.worst_first {
            // As Redis lists them: the worst condition first (a stable sort keeps the ids'
            // order within one).
            all.sort_by_key(|i| std::cmp::Reverse(i.summary.condition));
        }
        let mut all = all.into_iter().skip(from);
        let instances: Vec<InstanceView> = all.by_ref().take(limit).cloned().collect();
        let next_cursor = all.next().is_some().then(|| (from + limit).to_string());
        Ok(InstancePage {
            instances,
            next_cursor,
        })
    }

    /// The data center named `name`.
    #[must_use]
    pub fn datacenter(&self, name: &str) -> Option<&DatacenterView> {
        self.datacenters.iter().find(|d| d.datacenter == name)
    }

    /// What fails across the fleet: every data center's failing dependencies, shared failures
    /// first, then the worst level, the most instances, by data center and dependency. The
    /// one order every consumer shows (`/fleet/dependencies`, the fleet page, MCP's `fleet`).
    #[must_use]
    pub fn what_fails(&self) -> Vec<&DependencyFailure> {
        let mut rows: Vec<_> = self.datacenters.iter().flat_map(|d| &d.failing).collect();
        rows.sort_by(|a, b| {
            (b.shared, b.level, b.instances)
                .cmp(&(a.shared, a.level, a.instances))
                .then_with(|| {
                    (a.datacenter.as_str(), a.dependency.as_str())
                        .cmp(&(b.datacenter.as_str(), b.dependency.as_str()))
                })
        });
        rows
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

    /// The same view, failing open: every data center answers healthy (`failOpen`), as when
    /// the store has not been read for so long that no verdict of it can be trusted.
    #[must_use]
    pub fn into_failed_open(mut self) -> Self {
        self.fail_open = true;
        for dc in &mut self.datacenters {
            dc.fail_open = true;
            dc.condition = CheckStatus::Ok;
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
