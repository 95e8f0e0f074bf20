//! Statuspage v2 JSON (`/api/v2/…`), shaped field for field as Atlassian's public page API,
//! so that the clients, widgets and monitors written for it read ours unchanged. Each body
//! is made once per change of what it shows.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

use super::wire::{
    ComponentBody, ComponentsDoc, IncidentBody, IncidentsDoc, MaintenancesDoc, PageInfo,
    PageStatus, StatusDoc, SummaryDoc, UpdateBody,
};
use super::{indicator, Component, Maintenance, PublicIncident, Snapshot, StatusPageState};

/// A time in ms as RFC 3339 with milliseconds, as Statuspage writes them.
pub(super) fn time(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub(super) fn at(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub(crate) struct Render<'a> {
    state: &'a StatusPageState,
    s: &'a Snapshot,
}

impl<'a> Render<'a> {
    /// The JSON of `s`, a snapshot of `state`'s page.
    #[cfg_attr(not(feature = "subscribers"), allow(dead_code))]
    pub(crate) fn new(state: &'a StatusPageState, s: &'a Snapshot) -> Self {
        Self { state, s }
    }
}

impl Render<'_> {
    fn page_id(&self) -> String {
        self.state.name.clone()
    }

    fn updated(&self) -> String {
        let latest = self
            .s
            .incidents
            .iter()
            .map(PublicIncident::last_changed)
            .max();
        latest.map_or_else(|| at(self.s.now), time)
    }

    pub(crate) fn page(&self) -> PageInfo {
        PageInfo {
            id: self.page_id(),
            name: self.state.name.clone(),
            url: self.state.url.clone().unwrap_or_default(),
            time_zone: "Etc/UTC",
            updated_at: self.updated(),
        }
    }

    pub(crate) fn status(&self) -> PageStatus {
        let (indicator, description) = indicator(self.s.condition);
        PageStatus {
            indicator,
            description,
        }
    }

    fn component(&self, position: usize, c: &Component) -> ComponentBody {
        ComponentBody {
            id: c.id.clone(),
            name: c.name.clone(),
            status: c.status(),
            created_at: at(c.created),
            updated_at: at(c.since.max(c.created)),
            position: position + 1,
            description: c.description.clone(),
            showcase: true,
            start_date: None,
            group_id: c.group_id.clone(),
            page_id: self.page_id(),
            group: !c.children.is_empty(),
            only_show_if_degraded: false,
            components: (!c.children.is_empty()).then(|| c.children.clone()),
        }
    }

    pub(crate) fn components(&self) -> Vec<ComponentBody> {
        self.s
            .components
            .iter()
            .enumerate()
            .map(|(i, c)| self.component(i, c))
            .collect()
    }

    fn touched(&self, ids: &[(String, String)]) -> Vec<ComponentBody> {
        self.s
            .components
            .iter()
            .enumerate()
            .filter(|(_, c)| ids.iter().any(|(id, _)| *id == c.id))
            .map(|(i, c)| self.component(i, c))
            .collect()
    }

    pub(crate) fn incident(&self, i: &PublicIncident) -> IncidentBody {
        let id = i.id.to_string();
        let shortlink = format!(
            "{}/status/page#incident-{id}",
            self.state.url.as_deref().unwrap_or_default()
        );
        IncidentBody {
            incident_updates: i
                .updates
                .iter()
                .map(|u| UpdateBody {
                    id: format!("{id}-{}", u.id),
                    status: u.status.as_str(),
                    body: u.body.clone(),
                    incident_id: id.clone(),
                    created_at: time(u.at),
                    updated_at: time(u.at),
                    display_at: time(u.at),
                    affected_components: Vec::new(),
                    deliver_notifications: true,
                    custom_tweet: None,
                    tweet_id: None,
                })
                .collect(),
            components: self.touched(&i.components),
            id,
            name: i.name.clone(),
            status: i.status_word(),
            created_at: time(i.started),
            updated_at: time(i.last_changed()),
            monitoring_at: i.monitoring.map(time),
            resolved_at: i.resolved.map(time),
            impact: i.impact,
            shortlink,
            started_at: time(i.started),
            page_id: self.page_id(),
            scheduled_for: None,
            scheduled_until: None,
            postmortem_body: i.postmortem.as_ref().map(|(body, _)| body.clone()),
            postmortem_published_at: i.postmortem.as_ref().map(|(_, at)| time(*at)),
        }
    }

    pub(crate) fn incidents(&self, open_only: bool) -> Vec<IncidentBody> {
        self.s
            .incidents
            .iter()
            .filter(|i| !open_only || i.resolved.is_none())
            .map(|i| self.incident(i))
            .collect()
    }

    pub(crate) fn maintenance(&self, m: &Maintenance) -> IncidentBody {
        let status = if m.completed {
            "completed"
        } else if m.active {
            "in_progress"
        } else {
            "scheduled"
        };
        let shortlink = format!(
            "{}/status/page#{}",
            self.state.url.as_deref().unwrap_or_default(),
            m.id
        );
        IncidentBody {
            id: m.id.clone(),
            name: m.name.clone(),
            status,
            created_at: at(m.set_at),
            updated_at: at(m.set_at),
            monitoring_at: None,
            resolved_at: None,
            impact: "maintenance",
            shortlink,
            started_at: at(m.start),
            page_id: self.page_id(),
            incident_updates: vec![UpdateBody {
                id: format!("{}-0", m.id),
                status,
                body: m.body.clone(),
                incident_id: m.id.clone(),
                created_at: at(m.set_at),
                updated_at: at(m.set_at),
                display_at: at(m.set_at),
                affected_components: Vec::new(),
                deliver_notifications: true,
                custom_tweet: None,
                tweet_id: None,
            }],
            components: self.touched(&m.components),
            scheduled_for: Some(at(m.start)),
            scheduled_until: Some(at(m.until)),
            postmortem_body: None,
            postmortem_published_at: None,
        }
    }

    pub(crate) fn maintenances(&self, which: Which) -> Vec<IncidentBody> {
        self.s
            .maintenances
            .iter()
            .filter(|m| match which {
                Which::All => !m.completed,
                Which::Upcoming => !m.active && !m.completed,
                Which::Active => m.active,
            })
            .map(|m| self.maintenance(m))
            .collect()
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Which {
    All,
    Upcoming,
    Active,
}

/// Document `index` (as [`PATHS`](super::hot::PATHS) names them) of a snapshot, as JSON.
pub(super) fn document(index: usize, r: &Render<'_>) -> Vec<u8> {
    let json = match index {
        0 => serde_json::to_vec(&StatusDoc {
            page: r.page(),
            status: r.status(),
        }),
        1 => serde_json::to_vec(&SummaryDoc {
            page: r.page(),
            components: r.components(),
            incidents: r.incidents(true),
            scheduled_maintenances: r.maintenances(Which::All),
            status: r.status(),
        }),
        2 => serde_json::to_vec(&ComponentsDoc {
            page: r.page(),
            components: r.components(),
        }),
        3 | 4 => serde_json::to_vec(&IncidentsDoc {
            page: r.page(),
            incidents: r.incidents(index == 4),
        }),
        _ => serde_json::to_vec(&MaintenancesDoc {
            page: r.page(),
            scheduled_maintenances: r.maintenances(match index {
                6 => Which::Upcoming,
                7 => Which::Active,
                _ => Which::All,
            }),
        }),
    };
    json.unwrap_or_default()
}
