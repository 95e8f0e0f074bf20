//! The shapes of the page's routes in the OpenAPI description: incidents, postmortems,
//! announced maintenances, subscriptions. They mirror what goes on the wire, field for field.

// The types below are never built: they only describe JSON for the document.
#![allow(dead_code)]

use utoipa::ToSchema;

pub(crate) use status_http_core::schema::Error;

/// Where an incident stands.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)] // a schema only
pub(crate) enum IncidentStatus {
    Investigating,
    Identified,
    Monitoring,
    Resolved,
}

/// An operator's update: a status and a message (at most 4,096 characters, not blank).
#[derive(ToSchema)]
pub(crate) struct IncidentUpdateRequest {
    status: IncidentStatus,
    /// Not blank, no control characters (line breaks included), at most 4,096 characters.
    #[schema(
        min_length = 1,
        max_length = 4096,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b-\\u200f\\u2060-\\u2064\\u206a-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0][^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    message: String,
    /// Accepted and not read: the actor is the operator whose token makes the call.
    #[schema(
        nullable = false,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    actor: Option<String>,
}

/// A postmortem: what happened and what changes, for the page.
#[derive(ToSchema)]
pub(crate) struct PostmortemRequest {
    /// Not blank; line breaks kept (paragraphs apart by a blank line), no other control
    /// character; at most 10,000 characters.
    #[schema(
        min_length = 1,
        max_length = 10000,
        pattern = "^[^\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*[^\\s\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b-\\u200f\\u2060-\\u2064\\u206a-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0][^\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    body: String,
    /// Accepted and not read: the actor is the operator whose token makes the call.
    #[schema(
        nullable = false,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]*$"
    )]
    actor: Option<String>,
}

/// A subscription: a mail address or a webhook URL, maybe the components cared about. The
/// page's form sends the same as `application/x-www-form-urlencoded`, `components` apart by
/// commas.
#[derive(ToSchema)]
pub(crate) struct SubscribeRequest {
    /// A mail address (told once confirmed by the link mailed to it).
    #[schema(nullable = false, max_length = 254)]
    email: Option<String>,
    /// An `http` or `https` URL, its host at a public address.
    #[schema(nullable = false, max_length = 2048)]
    webhook: Option<String>,
    /// Component ids of the page (at most 64); all when none.
    #[schema(nullable = false, max_items = 64)]
    components: Option<Vec<String>>,
}

/// A subscription taken.
#[derive(ToSchema)]
pub(crate) struct Subscribed {
    /// `pending`: a confirmation mail, or a webhook's challenge (with its unsubscribe link),
    /// is on its way. The same whether the address or URL was known or not.
    status: String,
    /// What to do next, in the visitor's language.
    message: String,
}

/// A maintenance to announce to the public.
#[derive(ToSchema)]
pub(crate) struct AnnounceRequest {
    /// For customers: printable, not blank, at most 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    title: String,
    /// For customers: line breaks kept, not blank, at most 4,096 characters.
    #[schema(min_length = 1, max_length = 4096)]
    message: String,
    /// The dependencies it covers (1 to 64), muted for its window.
    #[schema(min_items = 1, max_items = 64)]
    dependencies: Vec<String>,
    /// When it starts (RFC 3339; now when not given).
    #[schema(nullable = false, format = DateTime)]
    start: Option<String>,
    /// When it ends (RFC 3339), after the start and within 30 days.
    #[schema(format = DateTime)]
    end: String,
    /// Accepted and not read: the actor is the operator whose token makes the call.
    #[schema(nullable = false)]
    actor: Option<String>,
}

/// A maintenance announced, as kept.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Announcement {
    id: i64,
    title: String,
    message: String,
    dependencies: Vec<String>,
    #[schema(format = DateTime)]
    start: String,
    #[schema(format = DateTime)]
    end: String,
    #[schema(format = DateTime)]
    created: String,
    actor: Option<String>,
    /// When it was called off, if it was.
    #[schema(format = DateTime)]
    cancelled: Option<String>,
    /// On a POST: the dependencies it could not mute, and why (none, as a rule).
    #[schema(nullable = false)]
    not_muted: Option<Vec<serde_json::Value>>,
}

/// Maintenances announced, the soonest first.
#[derive(ToSchema)]
pub(crate) struct AnnouncementList {
    maintenances: Vec<Announcement>,
}

/// An incident's postmortem, as kept.
#[derive(ToSchema)]
pub(crate) struct Postmortem {
    body: String,
    /// When it was published (its last writing).
    #[schema(format = DateTime)]
    at: String,
    /// Who wrote it.
    actor: Option<String>,
}

/// An update of an incident, as kept.
#[derive(ToSchema)]
pub(crate) struct IncidentUpdate {
    id: i64,
    #[schema(format = DateTime)]
    at: String,
    status: IncidentStatus,
    message: String,
    /// Who said it; null for the engine.
    actor: Option<String>,
    /// What it is: opened, reopened or resolved by the engine, or an operator's.
    kind: UpdateKind,
}

/// What an incident update is.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
pub(crate) enum UpdateKind {
    /// The engine opened the incident.
    Opened,
    /// The engine reopened it within the quiet time.
    Reopened,
    /// The engine resolved it.
    Resolved,
    /// An operator said it.
    Operator,
}

/// An incident as operators read it.
#[derive(ToSchema)]
pub(crate) struct Incident {
    id: i64,
    /// Its root causes and how bad.
    title: String,
    status: IncidentStatus,
    /// `none`, `minor`, `major` or `critical`.
    impact: String,
    /// The dependencies it is keyed by.
    roots: Vec<String>,
    /// Every dependency it covered, with the worst level each reached.
    affected: std::collections::BTreeMap<String, String>,
    #[schema(format = DateTime)]
    started: String,
    #[schema(format = DateTime)]
    resolved: Option<String>,
    #[schema(format = DateTime)]
    updated: String,
    updates: Vec<IncidentUpdate>,
    /// Its postmortem, once written.
    postmortem: Option<Postmortem>,
}

/// Incidents open and of the last days, the latest started first.
#[derive(ToSchema)]
pub(crate) struct IncidentList {
    incidents: Vec<Incident>,
}

/// A subscriber, as an operator reads it (never its token).
#[derive(ToSchema)]
pub(crate) struct SubscriberEntry {
    id: i64,
    /// `email` or `webhook`.
    kind: String,
    /// The mail address or the webhook's URL.
    address: String,
    /// The component ids it chose; empty for all.
    components: Vec<String>,
    /// The language it is written to in.
    lang: String,
    /// When it asked (RFC 3339).
    created: String,
    /// When it confirmed (RFC 3339); null while it has not.
    confirmed: Option<String>,
}

/// Every subscriber, by id.
#[derive(ToSchema)]
pub(crate) struct SubscriberList {
    subscribers: Vec<SubscriberEntry>,
}
