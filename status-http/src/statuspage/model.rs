//! What the public routes show, made of the registry and the incidents: components,
//! incidents and maintenance windows in outsiders' words.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use status_core::{CheckStatus, Facts, Registry};
use status_history::incident::{Incident, UpdateKind, UpdateStatus};

use super::PUBLIC_TAG;

/// One component of the page: a group, a dependency tagged `public`, or the system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Component {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) level: CheckStatus,
    pub(crate) maintenance: bool,
    /// The dependencies it stands for (empty for the system: all of them).
    pub(crate) members: Vec<String>,
    /// Its series in the history, for its tiles and uptime.
    pub(crate) series: status_history::Series,
}

impl Component {
    /// Its Statuspage status.
    pub(crate) fn status(&self) -> &'static str {
        if self.maintenance {
            return "under_maintenance";
        }
        component_status(self.level)
    }

    /// Whether an incident that affected `affected` touches it.
    pub(crate) fn touched_by(&self, incident: &Incident) -> bool {
        self.members.is_empty()
            || self
                .members
                .iter()
                .any(|m| incident.affected.contains_key(m))
    }
}

pub(crate) fn component_status(level: CheckStatus) -> &'static str {
    match level {
        CheckStatus::Ok => "operational",
        CheckStatus::Minor => "degraded_performance",
        CheckStatus::Major => "partial_outage",
        CheckStatus::Outage => "major_outage",
    }
}

/// The page's indicator and its description, as Statuspage words them.
pub(crate) fn indicator(level: CheckStatus) -> (&'static str, &'static str) {
    match level {
        CheckStatus::Ok => ("none", "All Systems Operational"),
        CheckStatus::Minor => ("minor", "Minor Service Outage"),
        CheckStatus::Major => ("major", "Partial System Outage"),
        CheckStatus::Outage => ("critical", "Major Service Outage"),
    }
}

/// Every component the registry's `facts` show, in order: groups by name, then public
/// dependencies by id. Membership, levels and maintenance are the facts'; nothing is
/// derived here.
pub(super) fn components_of(appname: &str, facts: &Facts) -> Vec<Component> {
    let mut out = Vec::new();
    let mut groups: Vec<_> = facts.groups().iter().collect();
    groups.sort_by(|a, b| a.name().cmp(b.name()));
    for g in groups {
        let name = g.name().to_owned();
        out.push(Component {
            id: format!("group-{name}"),
            series: status_history::Series::Group(name.clone()),
            name,
            level: g.level(),
            maintenance: g.maintenance(),
            members: g.members().iter().map(|m| m.as_str().to_owned()).collect(),
        });
    }
    for d in facts.dependencies() {
        let r = d.result();
        if r.info().tags().iter().any(|t| t == PUBLIC_TAG) {
            let id = d.id().as_str().to_owned();
            out.push(Component {
                id: format!("dependency-{id}"),
                series: status_history::Series::Dependency(id.clone()),
                name: if r.description().is_empty() {
                    id.clone()
                } else {
                    r.description().to_owned()
                },
                level: d.level(),
                maintenance: d.maintenance(),
                members: vec![id],
            });
        }
    }
    if out.is_empty() {
        out.push(Component {
            id: "system".into(),
            name: appname.to_owned(),
            level: facts.level(),
            maintenance: facts.maintenance(),
            members: Vec::new(),
            series: status_history::Series::System,
        });
    }
    out
}

/// An incident as outsiders read it: named by the components it affects, the engine's
/// words replaced by plain ones.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PublicIncident {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) status: UpdateStatus,
    pub(crate) impact: &'static str,
    pub(crate) started: i64,
    pub(crate) updated: i64,
    pub(crate) resolved: Option<i64>,
    pub(crate) monitoring: Option<i64>,
    pub(crate) components: Vec<(String, String)>,
    pub(crate) updates: Vec<PublicUpdate>,
}

/// One update as outsiders read it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PublicUpdate {
    pub(crate) id: i64,
    pub(crate) at: i64,
    pub(crate) status: UpdateStatus,
    pub(crate) body: String,
}

impl PublicIncident {
    pub(crate) fn of(incident: &Incident, components: &[Component]) -> Self {
        let touched: Vec<(String, String)> = components
            .iter()
            .filter(|c| c.touched_by(incident))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        let names: Vec<&str> = touched.iter().map(|(_, n)| n.as_str()).collect();
        let what = if names.is_empty() {
            "the service".to_owned()
        } else {
            names.join(", ")
        };
        let name = match incident.impact {
            status_history::incident::Impact::Critical => format!("Outage of {what}"),
            status_history::incident::Impact::Major => format!("Disruption of {what}"),
            _ => format!("Degraded {what}"),
        };
        let updates = incident
            .updates
            .iter()
            .rev()
            .map(|u| PublicUpdate {
                id: u.id,
                at: u.at,
                status: u.status,
                // An operator writes for the page; the engine's words name internals.
                body: match u.kind {
                    UpdateKind::Operator => u.message.clone(),
                    UpdateKind::Resolved => "This incident has been resolved.".into(),
                    UpdateKind::Reopened => {
                        format!("The problem affecting {what} came back. We are investigating.")
                    }
                    UpdateKind::Opened => {
                        format!("We are investigating a problem affecting {what}.")
                    }
                },
            })
            .collect();
        Self {
            id: incident.id,
            name,
            status: incident.status(),
            impact: incident.impact.as_str(),
            started: incident.started,
            updated: incident.updated,
            resolved: incident.resolved,
            monitoring: incident
                .updates
                .iter()
                .find(|u| u.status == UpdateStatus::Monitoring)
                .map(|u| u.at),
            components: touched,
            updates,
        }
    }
}

/// A maintenance window: a mute of a component's dependency, in force or scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Maintenance {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) start: DateTime<Utc>,
    pub(crate) until: DateTime<Utc>,
    pub(crate) set_at: DateTime<Utc>,
    pub(crate) active: bool,
    pub(crate) components: Vec<(String, String)>,
}

/// The maintenance windows of the components' dependencies, the soonest first.
pub(super) fn maintenances(registry: &Registry, components: &[Component]) -> Vec<Maintenance> {
    let mut by_window: BTreeMap<(DateTime<Utc>, DateTime<Utc>), Maintenance> = BTreeMap::new();
    for mute in registry.mutes() {
        let id = mute.dependency.as_str();
        let touched: Vec<(String, String)> = components
            .iter()
            .filter(|c| !c.members.is_empty() && c.members.iter().any(|m| m == id))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        if touched.is_empty() {
            continue;
        }
        let m = by_window
            .entry((mute.start, mute.until))
            .or_insert_with(|| Maintenance {
                id: format!("maintenance-{}", mute.start.timestamp()),
                name: String::new(),
                start: mute.start,
                until: mute.until,
                set_at: mute.set_at,
                active: mute.active,
                components: Vec::new(),
            });
        for c in touched {
            if !m.components.contains(&c) {
                m.components.push(c);
            }
        }
    }
    by_window
        .into_values()
        .map(|mut m| {
            let names: Vec<&str> = m.components.iter().map(|(_, n)| n.as_str()).collect();
            m.name = format!("Scheduled maintenance of {}", names.join(", "));
            m
        })
        .collect()
}
