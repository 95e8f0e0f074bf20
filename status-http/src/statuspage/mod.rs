//! What the people who depend on the service read: a public status page, Statuspage v2
//! JSON, shields-style badges; and the incidents' admin API for operators.
//!
//! The public routes render the public view whatever the router's: components are the
//! registry's groups and the dependencies tagged `public` (the system alone when there are
//! none); incidents are named by the components they affect, and the engine's own updates
//! are said in words made for outsiders, never with dependency ids or messages.
//!
//! | level | component `status` | page `indicator` |
//! |---|---|---|
//! | OK | `operational` | `none` |
//! | MINOR | `degraded_performance` | `minor` |
//! | MAJOR | `partial_outage` | `major` |
//! | OUTAGE | `major_outage` | `critical` |
//! | a dependency muted (maintenance) | `under_maintenance` | |

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use chrono::{DateTime, Utc};
use status_core::{CheckStatus, Registry, SystemReport};
use status_history::incident::{Incident, UpdateStatus};
use status_history::History;
use tokio::time::Instant;

pub(crate) mod admin;
pub(crate) mod badge;
pub(crate) mod json;
#[cfg(feature = "dashboard")]
pub(crate) mod page;

/// The tag that makes a dependency a component of the public page.
pub const PUBLIC_TAG: &str = "public";

/// How long past incidents stay on the page and in `incidents.json`: 14 days.
const PAST: chrono::Duration = chrono::Duration::days(14);
/// The most incidents read for the page.
const MAX_INCIDENTS: usize = 100;
/// How long incidents read from the store are served before they are read again.
const INCIDENTS_FRESH: Duration = Duration::from_secs(1);

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

/// Every component of `report`, in order: groups by name, then public dependencies by id.
fn components_of(registry: &Registry, report: &SystemReport) -> Vec<Component> {
    let mutes: Vec<String> = registry
        .mutes()
        .into_iter()
        .filter(|m| m.active)
        .map(|m| m.dependency.as_str().to_owned())
        .collect();
    let mut out = Vec::new();
    let mut groups = registry.groups();
    groups.sort_by(|a, b| a.group().name().as_str().cmp(b.group().name().as_str()));
    for g in groups {
        let name = g.group().name().as_str().to_owned();
        let members: Vec<String> = report
            .results()
            .iter()
            .filter(|r| g.group().selects(r.info()))
            .map(|r| r.id().as_str().to_owned())
            .collect();
        let maintenance = g.condition() != CheckStatus::Ok
            && !members.is_empty()
            && report
                .results()
                .iter()
                .filter(|r| {
                    r.status() != CheckStatus::Ok && members.iter().any(|m| m == r.id().as_str())
                })
                .all(|r| mutes.iter().any(|m| m == r.id().as_str()));
        out.push(Component {
            id: format!("group-{name}"),
            series: status_history::Series::Group(name.clone()),
            name,
            level: g.condition(),
            maintenance,
            members,
        });
    }
    for r in report.results() {
        if r.info().tags().iter().any(|t| t == PUBLIC_TAG) {
            let id = r.id().as_str().to_owned();
            out.push(Component {
                id: format!("dependency-{id}"),
                series: status_history::Series::Dependency(id.clone()),
                name: if r.description().is_empty() {
                    id.clone()
                } else {
                    r.description().to_owned()
                },
                level: r.status(),
                maintenance: mutes.contains(&id),
                members: vec![id],
            });
        }
    }
    if out.is_empty() {
        out.push(Component {
            id: "system".into(),
            name: registry.appname().to_owned(),
            level: report.condition(),
            maintenance: false,
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
                body: match (&u.actor, u.status) {
                    (Some(_), _) => u.message.clone(),
                    (None, UpdateStatus::Resolved) => "This incident has been resolved.".into(),
                    (None, _) if u.message.contains("reopened") => {
                        format!("The problem affecting {what} came back. We are investigating.")
                    }
                    (None, _) => format!("We are investigating a problem affecting {what}."),
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

/// A snapshot, with the report and incidents it was made of.
type Made = (Arc<SystemReport>, Arc<Vec<Incident>>, Arc<Snapshot>);

/// The routes' state: the registry, the history, and the bodies cached per change.
#[derive(Debug)]
pub(crate) struct StatusPageState {
    pub(crate) registry: Registry,
    pub(crate) history: Option<History>,
    pub(crate) name: String,
    pub(crate) url: Option<String>,
    incidents: tokio::sync::Mutex<Option<(Instant, Arc<Vec<Incident>>)>>,
    /// The last snapshot, and the report and incidents it was made of.
    last: Mutex<Option<Made>>,
    bodies: Mutex<HashMap<&'static str, (u64, Bytes)>>,
    #[cfg(feature = "dashboard")]
    pub(crate) streams: std::sync::atomic::AtomicUsize,
}

/// What one render sees: the components, the incidents, the maintenance windows.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub(crate) components: Vec<Component>,
    pub(crate) incidents: Vec<PublicIncident>,
    pub(crate) maintenances: Vec<Maintenance>,
    pub(crate) condition: CheckStatus,
    pub(crate) now: DateTime<Utc>,
    /// Changes when anything shown changes.
    pub(crate) fingerprint: u64,
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

impl StatusPageState {
    pub(crate) fn new(
        registry: Registry,
        history: Option<History>,
        name: String,
        url: Option<String>,
    ) -> Self {
        Self {
            registry,
            history,
            name,
            url,
            incidents: tokio::sync::Mutex::new(None),
            last: Mutex::new(None),
            bodies: Mutex::new(HashMap::new()),
            #[cfg(feature = "dashboard")]
            streams: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The incidents open and past (14 days), read from the store at most once a second; a
    /// store that fails serves the last read (none before the first).
    async fn incidents(&self) -> Arc<Vec<Incident>> {
        let Some(history) = &self.history else {
            return Arc::default();
        };
        let mut cached = self.incidents.lock().await;
        if let Some((at, list)) = &*cached {
            if at.elapsed() < INCIDENTS_FRESH {
                return Arc::clone(list);
            }
        }
        let since = history.now() - PAST;
        let list = match history.incidents(since, MAX_INCIDENTS).await {
            Ok(list) => Arc::new(list),
            Err(e) => {
                tracing::warn!("the status page could not read incidents: {e}");
                cached
                    .as_ref()
                    .map_or_else(Arc::default, |(_, list)| Arc::clone(list))
            }
        };
        *cached = Some((Instant::now(), Arc::clone(&list)));
        list
    }

    /// What the page shows now: made again only when the registry's report (a new one at
    /// most a second apart, or on a change) or the incidents read are new, as the probes'
    /// bodies are.
    pub(crate) async fn snapshot(&self) -> Arc<Snapshot> {
        let kept = self.incidents().await;
        let report = self.registry.report();
        if let Some((r, i, snapshot)) = &*self.last.lock().unwrap_or_else(PoisonError::into_inner) {
            if Arc::ptr_eq(r, &report) && Arc::ptr_eq(i, &kept) {
                return Arc::clone(snapshot);
            }
        }
        let snapshot = Arc::new(self.make(&report, &kept));
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((report, kept, Arc::clone(&snapshot)));
        snapshot
    }

    fn make(&self, report: &SystemReport, kept: &[Incident]) -> Snapshot {
        let components = components_of(&self.registry, report);
        let incidents: Vec<PublicIncident> = kept
            .iter()
            .map(|i| PublicIncident::of(i, &components))
            .collect();
        let maintenances = maintenances(&self.registry, &components);
        let condition = report.condition();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&components, &incidents, &maintenances, condition).hash(&mut h);
        Snapshot {
            components,
            incidents,
            maintenances,
            condition,
            now: self
                .history
                .as_ref()
                .map_or_else(|| self.registry.clock().wall(), History::now),
            fingerprint: h.finish(),
        }
    }

    /// The body of `kind` made of a snapshot with this fingerprint, if there is one.
    pub(crate) fn peek(&self, kind: &'static str, fingerprint: u64) -> Option<Bytes> {
        let bodies = self.bodies.lock().unwrap_or_else(PoisonError::into_inner);
        bodies
            .get(kind)
            .filter(|(f, _)| *f == fingerprint)
            .map(|(_, body)| body.clone())
    }

    /// The body of `kind` for a snapshot with this fingerprint: the one kept, or the one
    /// `render` makes (once per change of what it shows).
    pub(crate) fn cached(
        &self,
        kind: &'static str,
        fingerprint: u64,
        render: impl FnOnce() -> Vec<u8>,
    ) -> Bytes {
        if let Some(body) = self.peek(kind, fingerprint) {
            return body;
        }
        // Rendered outside the lock: another request may render the same; one is kept.
        let body = Bytes::from(render());
        self.bodies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kind, (fingerprint, body.clone()));
        body
    }
}

/// The maintenance windows of the components' dependencies, the soonest first.
fn maintenances(registry: &Registry, components: &[Component]) -> Vec<Maintenance> {
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

/// Adds the public routes: the page (with `dashboard`), Statuspage v2 JSON, badges.
pub(crate) fn routes<S>(router: axum::Router<S>) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<StatusPageState>: axum::extract::FromRef<S>,
{
    use axum::routing::get;
    let router = router
        .route("/api/v2/status.json", get(json::status))
        .route("/api/v2/summary.json", get(json::summary))
        .route("/api/v2/components.json", get(json::components))
        .route("/api/v2/incidents.json", get(json::incidents))
        .route("/api/v2/incidents/unresolved.json", get(json::unresolved))
        .route(
            "/api/v2/scheduled-maintenances.json",
            get(json::maintenances),
        )
        .route(
            "/api/v2/scheduled-maintenances/upcoming.json",
            get(json::upcoming),
        )
        .route(
            "/api/v2/scheduled-maintenances/active.json",
            get(json::active),
        )
        .route("/badge/{file}", get(badge::level))
        .route("/badge/{name}/uptime.svg", get(badge::uptime));
    #[cfg(feature = "dashboard")]
    let router = router
        .route("/status/page", get(page::page))
        .route("/status/page/events", get(page::events));
    router
}
