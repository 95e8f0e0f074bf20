//! What the public routes show, made of the registry and the incidents: components,
//! incidents and maintenance windows in outsiders' words.

use chrono::{DateTime, Utc};
use status_core::{CheckStatus, Facts};
use status_history::incident::{Incident, UpdateKind, UpdateStatus};
use status_history::Announcement;

use super::public::PublicGroup;
use super::PUBLIC_TAG;

/// One component of the page: a public group, a dependency tagged `public`, or the system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Component {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) level: CheckStatus,
    pub(crate) maintenance: bool,
    /// When its level last changed.
    pub(crate) since: DateTime<Utc>,
    /// When the page first showed it (set by the page's state).
    pub(crate) created: DateTime<Utc>,
    /// The public group it is nested under (its component id).
    pub(crate) group_id: Option<String>,
    /// For a public group, the components nested under it (their ids).
    pub(crate) children: Vec<String>,
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

/// Every component the registry's `facts` show, in order: each public group (in the order
/// given) followed by the public dependencies nested under it, then the public dependencies
/// in no public group, by id; the system alone when there is none. Membership, levels and
/// maintenance are the facts'; nothing is derived here. A public group the registry does
/// not hold (yet) is left out.
pub(super) fn components_of(
    appname: &str,
    facts: &Facts,
    public: &[PublicGroup],
) -> Vec<Component> {
    let public_dependency = |id: &str| {
        facts
            .dependency(id)
            .is_some_and(|d| d.result().info().tags().iter().any(|t| t == PUBLIC_TAG))
    };
    let dependency = |id: &str, group_id: Option<String>| {
        let d = facts.dependency(id)?;
        let r = d.result();
        Some(Component {
            id: format!("dependency-{id}"),
            series: status_history::Series::Dependency(id.to_owned()),
            name: if r.description().is_empty() {
                id.to_owned()
            } else {
                r.description().to_owned()
            },
            description: None,
            level: d.level(),
            maintenance: d.maintenance(),
            since: r.since(),
            created: DateTime::default(),
            group_id,
            children: Vec::new(),
            members: vec![id.to_owned()],
        })
    };
    let mut out = Vec::new();
    let mut nested = std::collections::HashSet::new();
    for p in public {
        let Some(g) = facts.group(&p.group) else {
            continue;
        };
        let id = format!("group-{}", p.group);
        let members: Vec<String> = g.members().iter().map(|m| m.as_str().to_owned()).collect();
        let shown: Vec<&String> = members
            .iter()
            .filter(|m| public_dependency(m) && !nested.contains(*m))
            .collect();
        let since = members
            .iter()
            .filter_map(|m| facts.dependency(m))
            .map(|d| d.result().since())
            .max()
            .unwrap_or_default();
        let children: Vec<Component> = shown
            .iter()
            .filter_map(|m| dependency(m, Some(id.clone())))
            .collect();
        nested.extend(shown.into_iter().cloned());
        out.push(Component {
            series: status_history::Series::Group(p.group.clone()),
            name: p.name.clone(),
            description: p.description.clone(),
            level: g.level(),
            maintenance: g.maintenance(),
            since,
            created: DateTime::default(),
            group_id: None,
            children: children.iter().map(|c| c.id.clone()).collect(),
            members,
            id,
        });
        out.extend(children);
    }
    for d in facts.dependencies() {
        let id = d.id().as_str();
        if public_dependency(id) && !nested.contains(id) {
            out.extend(dependency(id, None));
        }
    }
    if out.is_empty() {
        out.push(Component {
            id: "system".into(),
            name: appname.to_owned(),
            description: None,
            level: facts.level(),
            maintenance: facts.maintenance(),
            since: facts
                .dependencies()
                .iter()
                .map(|d| d.result().since())
                .max()
                .unwrap_or_default(),
            created: DateTime::default(),
            group_id: None,
            children: Vec::new(),
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
    /// The names of the top-level components it touches, that its name says.
    pub(crate) what: Vec<String>,
    pub(crate) updates: Vec<PublicUpdate>,
    /// Its postmortem and when it was published, once written.
    pub(crate) postmortem: Option<(String, i64)>,
}

impl PublicIncident {
    /// When it last changed, its postmortem included.
    pub(crate) fn last_changed(&self) -> i64 {
        self.postmortem
            .as_ref()
            .map_or(self.updated, |(_, at)| self.updated.max(*at))
    }

    /// Its Statuspage status: `postmortem` once resolved with one written.
    pub(crate) fn status_word(&self) -> &'static str {
        if self.postmortem.is_some() && self.status == UpdateStatus::Resolved {
            "postmortem"
        } else {
            self.status.as_str()
        }
    }
}

/// One update as outsiders read it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PublicUpdate {
    pub(crate) id: i64,
    pub(crate) at: i64,
    pub(crate) status: UpdateStatus,
    /// In English (the JSON's and the feeds' language).
    pub(crate) body: String,
    /// Whose words: an operator's are shown as written, the engine's are said in the page's
    /// language.
    pub(crate) kind: UpdateKind,
}

impl PublicIncident {
    pub(crate) fn of(incident: &Incident, components: &[Component]) -> Self {
        let touched: Vec<(String, String)> = components
            .iter()
            .filter(|c| c.touched_by(incident))
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        // Named by the top-level components it touches: a nested one's group is touched too.
        let names: Vec<&str> = components
            .iter()
            .filter(|c| c.group_id.is_none() && c.touched_by(incident))
            .map(|c| c.name.as_str())
            .collect();
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
                kind: u.kind,
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
            what: names.iter().map(|n| (*n).to_owned()).collect(),
            updates,
            postmortem: incident.postmortem.as_ref().map(|p| (p.body.clone(), p.at)),
        }
    }
}

/// A maintenance an operator announced: what customers read of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Maintenance {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) body: String,
    pub(crate) start: DateTime<Utc>,
    pub(crate) until: DateTime<Utc>,
    pub(crate) set_at: DateTime<Utc>,
    /// In force now.
    pub(crate) active: bool,
    /// Over (its end passed).
    pub(crate) completed: bool,
    pub(crate) components: Vec<(String, String)>,
    /// When it was called off, if it was (then it is not shown; its subscribers are told).
    pub(crate) cancelled: Option<DateTime<Utc>>,
}

/// The announced maintenances at `now`, the soonest first, each with the components its
/// dependencies belong to: those shown, and those called off (told to subscribers, not
/// shown). A mute is not one: it silences, and publishes nothing.
pub(super) fn maintenances(
    announced: &[Announcement],
    components: &[Component],
    now: DateTime<Utc>,
) -> (Vec<Maintenance>, Vec<Maintenance>) {
    announced
        .iter()
        .map(|a| Maintenance {
            id: format!("maintenance-{}", a.id),
            name: a.title.clone(),
            body: a.body.clone(),
            start: a.start,
            until: a.until,
            set_at: a.created,
            active: a.start <= now && now < a.until,
            completed: a.until <= now,
            components: components
                .iter()
                .filter(|c| {
                    c.members.is_empty() || c.members.iter().any(|m| a.dependencies.contains(m))
                })
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect(),
            cancelled: a.cancelled,
        })
        .partition(|m| m.cancelled.is_none())
}
