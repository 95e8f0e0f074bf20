//! One dependency failing across a data center, counted from the store's counts by exact
//! level: the rows of a data center's view that "mine or shared" ([`crate::shared`]) reads.

use serde::Serialize;
use status_core::CheckStatus;

use crate::{DependencyCount, HealthRule};

/// One dependency failing across a data center at a level or worse: `primary-db OUTAGE on
/// 47 of 50 in dc-1, shared`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DependencyFailure {
    /// The data center.
    pub datacenter: String,
    /// The dependency's id.
    pub dependency: String,
    /// The level.
    pub level: CheckStatus,
    /// Its fresh instances failing the dependency at that level or worse.
    pub instances: usize,
    /// Its fresh instances.
    pub fresh: usize,
    /// Whether the failure is the data center's by the rule ([`HealthRule::shared`]): more
    /// than the share of its fresh instances, and at least the minimum.
    pub shared: bool,
    /// When this instance first read it failing (at this level), as long as it has since:
    /// set by [`FleetTracker`](crate::FleetTracker) (a view folded by hand has none).
    #[serde(skip)]
    pub since: Option<std::time::Instant>,
}

impl std::fmt::Display for DependencyFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} on {} of {} in {}",
            self.dependency, self.level, self.instances, self.fresh, self.datacenter
        )?;
        if self.shared {
            f.write_str(", shared")?;
        }
        Ok(())
    }
}

/// What fails across a data center of `fresh` instances, from the store's counts by exact
/// level: a row a dependency and level, counting the instances at that level or worse; shared
/// first, then the worst, the most widespread, by name.
pub(crate) fn failures_of(
    datacenter: &str,
    counted: &[DependencyCount],
    fresh: usize,
    rule: HealthRule,
) -> Vec<DependencyFailure> {
    let mut rows: Vec<DependencyFailure> = counted
        .iter()
        .map(|c| {
            let instances = at_least(counted, &c.dependency, c.level).min(fresh);
            DependencyFailure {
                datacenter: datacenter.to_owned(),
                dependency: c.dependency.clone(),
                level: c.level,
                instances,
                fresh,
                shared: rule.shared(instances, fresh),
                since: None,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        (b.shared, b.level, b.instances)
            .cmp(&(a.shared, a.level, a.instances))
            .then_with(|| a.dependency.cmp(&b.dependency))
    });
    rows
}

/// The instances of `counted` failing `dependency` at `level` or worse.
pub(crate) fn at_least(counted: &[DependencyCount], dependency: &str, level: CheckStatus) -> usize {
    counted
        .iter()
        .filter(|c| c.dependency == dependency && c.level >= level)
        .map(|c| c.instances)
        .sum()
}
