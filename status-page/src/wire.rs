//! The bodies of Statuspage's public page API, field for field (the `statuspage.io` npm
//! client's declared types are checked against them by `scripts/statuspage`).

use serde::Serialize;

/// `page`: which page this is.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct PageInfo {
    /// The page's id: the application's name.
    pub(super) id: String,
    /// Its name.
    pub(super) name: String,
    /// Where it is read (`Routes::status_page_url`, or empty).
    pub(super) url: String,
    /// Always `Etc/UTC`.
    pub(super) time_zone: &'static str,
    /// When what it shows last changed.
    pub(super) updated_at: String,
}

/// `status`: the page's one word.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct PageStatus {
    /// `none`, `minor`, `major` or `critical`.
    pub(super) indicator: &'static str,
    /// `All Systems Operational`, `Minor Service Outage`, `Partial System Outage` or
    /// `Major Service Outage`.
    pub(super) description: &'static str,
}

/// A component: a public group, a dependency tagged `public`, or the system.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct ComponentBody {
    pub(super) id: String,
    pub(super) name: String,
    /// `operational`, `degraded_performance`, `partial_outage`, `major_outage` or
    /// `under_maintenance`.
    pub(super) status: &'static str,
    /// When the page first showed it.
    pub(super) created_at: String,
    /// When its status last changed (or `created_at`, if later).
    pub(super) updated_at: String,
    pub(super) position: usize,
    /// What it is, for customers (a public group's).
    pub(super) description: Option<String>,
    pub(super) showcase: bool,
    pub(super) start_date: Option<String>,
    /// The public group it is nested under.
    pub(super) group_id: Option<String>,
    pub(super) page_id: String,
    /// Whether it is a group with components nested under it.
    pub(super) group: bool,
    pub(super) only_show_if_degraded: bool,
    /// A group's components (their ids), as Statuspage lists them; absent on the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) components: Option<Vec<String>>,
}

/// An update of an incident or a maintenance.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct UpdateBody {
    pub(super) id: String,
    /// `investigating`, `identified`, `monitoring`, `resolved`; for a maintenance
    /// `scheduled`, `in_progress`, `completed`.
    pub(super) status: &'static str,
    pub(super) body: String,
    pub(super) incident_id: String,
    pub(super) created_at: String,
    pub(super) updated_at: String,
    pub(super) display_at: String,
    pub(super) affected_components: Vec<AffectedBody>,
    pub(super) deliver_notifications: bool,
    pub(super) custom_tweet: Option<String>,
    pub(super) tweet_id: Option<String>,
}

/// A component an update touched.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct AffectedBody {
    pub(super) code: String,
    pub(super) name: String,
    pub(super) old_status: &'static str,
    pub(super) new_status: &'static str,
}

/// An incident, or a scheduled maintenance (with `scheduled_for` and `scheduled_until`).
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct IncidentBody {
    pub(super) id: String,
    pub(super) name: String,
    /// `investigating`, `identified`, `monitoring`, `resolved`, `postmortem`; for a
    /// maintenance `scheduled`, `in_progress`, `verifying`, `completed`.
    pub(super) status: &'static str,
    pub(super) created_at: String,
    pub(super) updated_at: String,
    pub(super) monitoring_at: Option<String>,
    pub(super) resolved_at: Option<String>,
    /// `none`, `minor`, `major`, `critical`; `maintenance` for a maintenance.
    pub(super) impact: &'static str,
    pub(super) shortlink: String,
    pub(super) started_at: String,
    pub(super) page_id: String,
    pub(super) incident_updates: Vec<UpdateBody>,
    pub(super) components: Vec<ComponentBody>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) scheduled_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) scheduled_until: Option<String>,
    /// What was learned, once resolved (plain text, paragraphs apart by blank lines).
    pub(super) postmortem_body: Option<String>,
    /// When the postmortem was published.
    pub(super) postmortem_published_at: Option<String>,
}

/// `/api/v2/status.json`.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct StatusDoc {
    pub(super) page: PageInfo,
    pub(super) status: PageStatus,
}

/// `/api/v2/summary.json`.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct SummaryDoc {
    pub(super) page: PageInfo,
    pub(super) components: Vec<ComponentBody>,
    pub(super) incidents: Vec<IncidentBody>,
    pub(super) scheduled_maintenances: Vec<IncidentBody>,
    pub(super) status: PageStatus,
}

/// `/api/v2/components.json`.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct ComponentsDoc {
    pub(super) page: PageInfo,
    pub(super) components: Vec<ComponentBody>,
}

/// `/api/v2/incidents.json` and `/api/v2/incidents/unresolved.json`.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct IncidentsDoc {
    pub(super) page: PageInfo,
    pub(super) incidents: Vec<IncidentBody>,
}

/// `/api/v2/scheduled-maintenances.json` and its `upcoming` and `active` lists.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct MaintenancesDoc {
    pub(super) page: PageInfo,
    pub(super) scheduled_maintenances: Vec<IncidentBody>,
}
