//! The `why` tool's answer about one dependency, read from the core's [`Facts`]: its level
//! and since when, its message as the caller may read it, its failing ancestors up to the
//! root causes, its dependents, and what it takes down. Pure, like [`diagnose`](crate::diagnose);
//! the transitions and the fleet's word are added by the tool, which reads them.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use rmcp::schemars;
use serde::Serialize;
use status_core::{CheckStatus, DependencyInfo, Facts, FeatureState};

use crate::answer::{capped, Omitted};
use crate::diagnose::{takes_down, time, Access, TakesDown};

/// A dependency named in an answer, with its level.
#[derive(Debug, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Named {
    pub(crate) id: String,
    #[schemars(with = "String")]
    pub(crate) level: CheckStatus,
    /// The root causes its own failure is attributed to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) blocked_by: Vec<String>,
}

/// A transition, as `why` shows it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Change {
    pub(crate) at: String,
    #[schemars(with = "Option<String>")]
    pub(crate) from: Option<CheckStatus>,
    #[schemars(with = "String")]
    pub(crate) to: CheckStatus,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) message: String,
}

/// The fleet's word on one dependency.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FleetWord {
    /// `shared` when some data center fails it on more than its share of instances, `mine`
    /// when this instance fails it and no data center shares it, `none` when nobody fails it.
    pub(crate) verdict: &'static str,
    /// Each data center failing it: its level, how many of how many fresh instances, shared.
    pub(crate) datacenters: Vec<FleetRow>,
    /// Whether the fleet view is older than it should be.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stale: bool,
}

/// A data center failing a dependency.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FleetRow {
    pub(crate) dependency: String,
    pub(crate) datacenter: String,
    #[schemars(with = "String")]
    pub(crate) level: CheckStatus,
    pub(crate) instances: usize,
    pub(crate) fresh: usize,
    pub(crate) shared: bool,
}

/// A mute in force on the dependency.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct MuteAnswer {
    pub(crate) reason: String,
    pub(crate) until: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) actor: Option<String>,
}

/// The `why` tool's answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Why {
    pub(crate) id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) description: String,
    pub(crate) urgency: &'static str,
    #[schemars(with = "String")]
    pub(crate) level: CheckStatus,
    #[schemars(with = "String")]
    pub(crate) impact: CheckStatus,
    pub(crate) since: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) last_known_good: Option<String>,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) stale: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) flapping: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) muted: Option<MuteAnswer>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) maintenance: bool,
    /// The root causes of its failure (itself when nothing above it fails); empty when OK.
    pub(crate) root_causes: Vec<String>,
    /// Its failing ancestors, nearest first, up to the root causes.
    pub(crate) causes: Vec<Named>,
    /// Everything that depends on it, directly or not, nearest first.
    pub(crate) dependents: Vec<Named>,
    /// What its failure takes down (when it is a root cause of one).
    pub(crate) takes_down: TakesDown,
    /// Its latest transitions, oldest first.
    pub(crate) transitions: Vec<Change>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fleet: Option<FleetWord>,
    #[serde(skip_serializing_if = "Omitted::is_empty")]
    pub(crate) omitted: Omitted,
}

/// The answer about `id`, or `None` when it is not registered.
pub(crate) fn why(
    facts: &Facts,
    features: &[FeatureState],
    infos: &[Arc<DependencyInfo>],
    id: &str,
    access: Access,
) -> Option<Why> {
    let d = facts.dependency(id)?;
    let r = d.result();
    let named = |id: &str| {
        facts.dependency(id).map(|p| Named {
            id: id.to_owned(),
            level: p.level(),
            blocked_by: p.blocked_by().iter().map(ToString::to_string).collect(),
        })
    };
    let parents: HashMap<&str, Vec<&str>> = infos
        .iter()
        .map(|i| {
            let parents = i
                .parents()
                .iter()
                .map(status_core::DependencyId::as_str)
                .collect();
            (i.id().as_str(), parents)
        })
        .collect();
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for (child, ps) in &parents {
        for p in ps {
            children.entry(p).or_default().push(child);
        }
    }
    for c in children.values_mut() {
        c.sort_unstable();
    }
    let failing = |id: &str| {
        facts
            .dependency(id)
            .is_some_and(|p| p.level() != CheckStatus::Ok)
    };
    // Only failing ancestors explain a failure; every dependent is something it can take down.
    let causes = walk(id, &parents, failing)
        .into_iter()
        .filter_map(named)
        .collect();
    let dependents = walk(id, &children, |_| true)
        .into_iter()
        .filter_map(named)
        .collect();
    let mut omitted = Omitted::default();
    let root_causes = if d.level() == CheckStatus::Ok {
        Vec::new()
    } else if d.blocked_by().is_empty() {
        vec![id.to_owned()]
    } else {
        d.blocked_by().iter().map(ToString::to_string).collect()
    };
    let takes_down = if d.level() != CheckStatus::Ok && d.blocked_by().is_empty() {
        takes_down(facts, features, id)
    } else {
        TakesDown::default()
    };
    Some(Why {
        id: id.to_owned(),
        description: r.description().to_owned(),
        urgency: r.urgency().as_str(),
        level: d.level(),
        impact: d.impact(),
        since: time(r.since()),
        last_known_good: r.last_known_good().map(time),
        message: access.message(r),
        stale: r.stale(),
        flapping: r.flapping(),
        muted: r.mute().filter(|m| m.active).map(|m| MuteAnswer {
            reason: access.said(&m.reason, "muted by an operator"),
            until: time(m.until),
            actor: m.actor.clone().filter(|_| access == Access::Admin),
        }),
        maintenance: d.maintenance(),
        root_causes,
        causes: capped(causes, "causes", &mut omitted),
        dependents: capped(dependents, "dependents", &mut omitted),
        takes_down,
        transitions: Vec::new(),
        fleet: None,
        omitted,
    })
}

/// Everything reachable from `start` along `edges` through nodes `follow` accepts,
/// breadth first (nearest first), `start` excluded; cycles visited once.
fn walk<'a>(
    start: &'a str,
    edges: &HashMap<&'a str, Vec<&'a str>>,
    follow: impl Fn(&str) -> bool,
) -> Vec<&'a str> {
    let mut seen: BTreeSet<&str> = BTreeSet::from([start]);
    let mut queue: VecDeque<&str> = VecDeque::from([start]);
    let mut found = Vec::new();
    while let Some(at) = queue.pop_front() {
        for &next in edges.get(at).into_iter().flatten() {
            if follow(next) && seen.insert(next) {
                found.push(next);
                queue.push_back(next);
            }
        }
    }
    found
}

impl Why {
    /// The answer in one line, for a model to read first.
    pub(crate) fn line(&self) -> String {
        let mut line = format!("{} is {} since {}", self.id, self.level, self.since);
        if self.level != CheckStatus::Ok {
            if self.root_causes.iter().any(|r| *r != self.id) {
                line.push_str(&format!(", blocked by {}", self.root_causes.join(", ")));
            } else {
                line.push_str(", a root cause");
                let t = &self.takes_down;
                if !t.dependencies.is_empty() || !t.features.is_empty() || !t.groups.is_empty() {
                    line.push_str(&format!(
                        " taking down {} dependencies, {} features, {} groups",
                        t.dependencies.len(),
                        t.features.len(),
                        t.groups.len()
                    ));
                }
            }
        }
        if self.maintenance {
            line.push_str(" (maintenance)");
        }
        if let Some(fleet) = &self.fleet {
            line.push_str(&format!("; fleet: {}", fleet.verdict));
        }
        line
    }
}
