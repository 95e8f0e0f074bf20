//! "Mine or shared", per dependency: what fails across a data center, and fleet-aware
//! readiness that excuses exactly the failures the data center shares.

use status_core::{CheckStatus, Readiness};

use crate::failure::at_least;
use crate::{DatacenterView, FleetView, OwnFailure};

/// `primary-db OUTAGE is shared: 46 of the 49 other instances of dc-1 fail it too`.
fn sentence(id: &str, level: CheckStatus, failing: usize, others: usize, dc: &str) -> String {
    format!("{id} {level} is shared: {failing} of the {others} other instances of {dc} fail it too")
}

impl DatacenterView {
    /// Its fresh instances failing `dependency` at `level` or worse (at most its fresh ones).
    #[must_use]
    pub fn failing_at_least(&self, dependency: &str, level: CheckStatus) -> usize {
        at_least(&self.counted, dependency, level).min(self.fresh)
    }
}

impl FleetView {
    /// Whether `dependency` failing at `level` on instance `me` of `datacenter` is shared
    /// there: failing at that level or worse on the other fresh instances by the rule
    /// ([`HealthRule::shared`](crate::HealthRule::shared)). Answers how many of how many others fail it; `None` when it
    /// is not shared, and always from a stale view, which is no information.
    #[must_use]
    pub fn shared(
        &self,
        datacenter: &str,
        me: &str,
        dependency: &str,
        level: CheckStatus,
    ) -> Option<(usize, usize)> {
        if self.stale {
            return None;
        }
        let dc = self.datacenter(datacenter)?;
        let mut failing = dc.failing_at_least(dependency, level);
        let mut others = dc.fresh;
        // This instance's own entry, if counted here, is not an other.
        let own = if dc.instances.is_empty() {
            self.own
                .as_ref()
                .filter(|own| own.datacenter == datacenter)
                .map(|own| {
                    own.failing
                        .iter()
                        .any(|f| f.dependency.id == dependency && f.dependency.level >= level)
                })
        } else {
            dc.instances
                .iter()
                .find(|i| !i.stale && i.summary.instance_id == me)
                .map(|i| {
                    crate::counted_failing(&i.summary.failing)
                        .0
                        .iter()
                        .any(|f| f.id == dependency && f.level >= level)
                })
        };
        if let Some(fails) = own {
            others = others.saturating_sub(1);
            if fails {
                failing = failing.saturating_sub(1);
            }
        }
        let failing = failing.min(others);
        self.rule
            .shared(failing, others)
            .then_some((failing, others))
    }

    /// Fleet-aware readiness: `own`, the readiness of instance `me` of `datacenter`, judged
    /// again by the fleet, one failing dependency at a time. A failure on the condition alone
    /// (startup done, no hold) whose failing dependencies are each either shared by the data
    /// center ([`shared`](Self::shared)) or too light to fail readiness by themselves is the
    /// data center's: the instance stays ready, and the reason names each shared failure with
    /// its count; whether the data center gets traffic is left to its endpoint (and GSLB). A
    /// failure of its own that fails readiness, whatever the others' conditions, is the
    /// instance's rule's answer, as is anything from a stale view, and anything before this
    /// instance's failing dependencies reached the store. In a data center where so few
    /// serve that readiness fails open ([`HealthRule::ready_fail_open_share`](crate::HealthRule::ready_fail_open_share)), every
    /// failure on the condition alone is excused, and the reason says so.
    #[must_use]
    pub fn readiness(&self, datacenter: &str, me: &str, own: Readiness) -> Readiness {
        if !own.fails_on_condition_alone() || self.stale {
            return own.by_instance();
        }
        if let Some(dc) = self.datacenter(datacenter).filter(|d| d.ready_fail_open) {
            let why = format!(
                "only {} of the {} instances of {datacenter} serve, below the readiness \
                 fail-open share ({:.0} %): every instance stays ready, since taking more out \
                 would only concentrate the load",
                dc.serving,
                dc.fresh,
                self.rule.ready_fail_open_share * 100.0
            );
            return own.by_fleet(why);
        }
        let mine = self.failing_of(datacenter, me);
        let mut shared = Vec::new();
        let mut worst_own = CheckStatus::Ok;
        for failure in mine.iter().filter(|f| f.impact != CheckStatus::Ok) {
            let (id, level) = (&failure.dependency.id, failure.dependency.level);
            match self.shared(datacenter, me, id, level) {
                Some((failing, others)) => {
                    shared.push(sentence(id, level, failing, others, datacenter));
                }
                None => worst_own = worst_own.max(failure.impact),
            }
        }
        if shared.is_empty() || own.fails_at(worst_own) {
            return own.by_instance();
        }
        let why = format!("{}; left to the data-center endpoint", shared.join("; "));
        own.by_fleet(why)
    }

    /// The first failure of this instance's own (as it published it, among `dependencies`,
    /// or any when empty) that its data center shares, said with the counts: what the culler
    /// asks before it asks the budget. `None` from a stale view, or before this instance's
    /// failing dependencies reached the store.
    #[must_use]
    pub fn own_shared_failure(&self, dependencies: &[String]) -> Option<String> {
        let own = self.own.as_ref()?;
        own.failing
            .iter()
            .filter(|f| f.impact != CheckStatus::Ok)
            .filter(|f| dependencies.is_empty() || dependencies.contains(&f.dependency.id))
            .find_map(|f| {
                let (id, level) = (&f.dependency.id, f.dependency.level);
                self.shared(&own.datacenter, "", id, level)
                    .map(|(failing, others)| sentence(id, level, failing, others, &own.datacenter))
            })
    }

    /// This instance's failing dependencies as counted: its own entry, or its summary in a
    /// view folded from summaries (each weighing its level, not knowing its urgency).
    fn failing_of(&self, datacenter: &str, me: &str) -> Vec<OwnFailure> {
        if let Some(own) = self.own.as_ref().filter(|o| o.datacenter == datacenter) {
            return own.failing.clone();
        }
        self.datacenter(datacenter)
            .and_then(|dc| dc.instances.iter().find(|i| i.summary.instance_id == me))
            .map(|i| {
                crate::counted_failing(&i.summary.failing)
                    .0
                    .into_iter()
                    .map(|dependency| OwnFailure {
                        impact: dependency.level,
                        dependency,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
