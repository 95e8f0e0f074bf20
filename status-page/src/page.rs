//! GET `/status/page`: the public status page, for the people who depend on the service.
//! It renders without JavaScript (and reloads itself every minute then), loads nothing from
//! outside, and with JavaScript follows `/status/page/events`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::Response;
use futures::Stream;
use status_history::incident::{UpdateKind, UpdateStatus};

use super::html::{html_response, AcceptLanguage, HTML};
use super::i18n::{self, Locale};
use super::{PublicIncident, Snapshot, StatusPageState};
use crate::error::ApiError;
use crate::query::Params;
use crate::render::{Body, Conditional};
use crate::story::{IncidentView, UpdateView};
use status_http_core::tiles;

/// Days of tiles a component shows.
const DAYS: u32 = 90;
/// The most pages following the events at once: an unauthenticated path stays bounded.
/// How often a stream looks for a change.
const EVERY: Duration = Duration::from_secs(2);

struct ComponentRow {
    id: String,
    name: String,
    description: String,
    /// Nested under the public group before it.
    nested: bool,
    status: String,
    class: &'static str,
    uptime: String,
    tiles: String,
    tiles_label: String,
}

struct MaintenanceView {
    id: String,
    name: String,
    paragraphs: Vec<String>,
    state: String,
    window: String,
}

/// The page's fixed words, in its language.
struct Words {
    lang: &'static str,
    title: String,
    status: String,
    open_incidents: String,
    scheduled_maintenance: String,
    components: String,
    components_span: String,
    past_incidents: String,
    past_span: String,
    no_incidents: String,
    updated: String,
    languages: String,
    subscribe_heading: String,
    subscribe_email: String,
    subscribe_button: String,
}

#[derive(Template)]
#[template(path = "statuspage.html")]
struct PageTemplate<'a> {
    name: &'a str,
    indicator: &'static str,
    description: String,
    open: Vec<IncidentView>,
    past: Vec<IncidentView>,
    maintenances: Vec<MaintenanceView>,
    components: Vec<ComponentRow>,
    t: Words,
    /// Whether visitors may subscribe by mail here.
    mail: bool,
    /// Each language: its tag, its name, whether it is this page's.
    languages: Vec<(&'static str, String, bool)>,
}

fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M")
        .to_string()
}

fn paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// An incident in the page's language: its name and the engine's updates said anew from
/// what they are; an operator's words as written.
pub(crate) fn view(i: &PublicIncident, l: &Locale) -> IncidentView {
    let what = if i.what.is_empty() {
        l.text("the-service", &[])
    } else {
        i.what.join(", ")
    };
    let say = |id: &str| l.text(id, &[("what", what.clone().into())]);
    let name = match i.impact {
        "critical" => say("incident-outage"),
        "major" => say("incident-disruption"),
        _ => say("incident-degraded"),
    };
    IncidentView {
        id: i.id,
        name,
        status: l.text(&format!("update-{}", i.status_word()), &[]),
        impact: i.impact,
        postmortem: i
            .postmortem
            .as_ref()
            .map(|(body, at)| (paragraphs(body), when(*at))),
        postmortem_label: l.text("postmortem", &[]),
        updates: i
            .updates
            .iter()
            .map(|u| UpdateView {
                status: l.text(&format!("update-{}", u.status.as_str()), &[]),
                at: when(u.at),
                body: match u.kind {
                    UpdateKind::Operator => u.body.clone(),
                    UpdateKind::Opened => say("engine-opened"),
                    UpdateKind::Reopened => say("engine-reopened"),
                    UpdateKind::Resolved => l.text("engine-resolved", &[]),
                },
            })
            .collect(),
    }
}

/// The uptime of `days` in the page's language, and what it covers.
fn uptime(days: &[status_history::DayTile], l: &Locale) -> String {
    let (share, observed) = tiles::coverage(days);
    let Some(share) = share else {
        return l.text("uptime-no-data", &[]);
    };
    let percent = l.percent(share);
    let whole = u64::try_from(days.len()).unwrap_or(u64::MAX) * 86_400_000;
    if observed + 60_000 >= whole {
        return percent;
    }
    l.text(
        "uptime-observed",
        &[
            ("uptime", percent.into()),
            ("observed", tiles::lasted(observed).into()),
            ("days", days.len().into()),
        ],
    )
}

async fn rows(state: &StatusPageState, s: &Snapshot, l: &Locale) -> Vec<ComponentRow> {
    let mut rows = Vec::with_capacity(s.components.len());
    for c in &s.components {
        let days = match &state.history {
            Some(h) => h.days(c.series.clone(), DAYS).await.unwrap_or_default(),
            None => Vec::new(),
        };
        rows.push(ComponentRow {
            id: c.id.clone(),
            name: c.name.clone(),
            description: c.description.clone().unwrap_or_default(),
            nested: c.group_id.is_some(),
            status: l.text(
                match c.status() {
                    "operational" => "status-operational",
                    "degraded_performance" => "status-degraded",
                    "partial_outage" => "status-partial",
                    "major_outage" => "status-major",
                    _ => "status-maintenance",
                },
                &[],
            ),
            class: if c.maintenance {
                "maintenance"
            } else {
                match c.level {
                    status_core::CheckStatus::Ok => "ok",
                    status_core::CheckStatus::Minor => "minor",
                    status_core::CheckStatus::Major => "major",
                    status_core::CheckStatus::Outage => "outage",
                }
            },
            uptime: if days.is_empty() {
                String::new()
            } else {
                uptime(&days, l)
            },
            tiles: tiles::tiles(&days),
            tiles_label: l.text("tiles-label", &[("name", c.name.clone().into())]),
        });
    }
    rows
}

/// `?lang=`: the page's language (else `Accept-Language`); anything else (a cache buster)
/// is ignored, as a public page should.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct PageQuery {
    lang: Option<String>,
}

/// GET `/status/page`.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page", tag = "status page",
    responses(
        (status = 200, description = "The public status page", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn page(
    State(state): State<Arc<StatusPageState>>,
    Params(query): Params<PageQuery>,
    AcceptLanguage(accept): AcceptLanguage,
    conditional: Conditional,
) -> Result<Response, ApiError> {
    let accept = accept.as_ref().and_then(|v| v.to_str().ok());
    let l = i18n::negotiate(query.lang.as_deref(), accept);
    // What is published changes with the minute too (the tiles change with the day, and
    // today's with the hour): a render a minute at most, per language.
    let published = state.published().await;
    if let Some(body) = published.page(l.key()) {
        return Ok(html_response(&body, l.tag(), &conditional));
    }
    // One page made at a time of what is published; who waited finds it made.
    let _making = published.making.lock().await;
    if let Some(body) = published.page(l.key()) {
        return Ok(html_response(&body, l.tag(), &conditional));
    }
    let s = &published.snapshot;
    let components = rows(&state, s, l).await;
    let html = {
        // The open incidents, or the problem the components show before one is public.
        let mut open: Vec<IncidentView> = s
            .incidents
            .iter()
            .filter(|i| i.resolved.is_none())
            .map(|i| view(i, l))
            .collect();
        open.extend(crate::story::provisional(s, open.len(), l));
        let (indicator, description) = crate::story::banner(s, &open, l);
        let days = DAYS.into();
        let t = Words {
            lang: l.tag(),
            title: l.text("page-title", &[("name", state.name.clone().into())]),
            status: l.text("page-status", &[]),
            open_incidents: l.text("open-incidents", &[]),
            scheduled_maintenance: l.text("scheduled-maintenance", &[]),
            components: l.text("components", &[]),
            components_span: l.text("components-span", &[("days", days)]),
            past_incidents: l.text("past-incidents", &[]),
            past_span: l.text("past-span", &[("days", 14.into())]),
            no_incidents: l.text("no-incidents", &[]),
            updated: l.text(
                "updated",
                &[("now", s.now.format("%Y-%m-%d %H:%M:%S").to_string().into())],
            ),
            languages: l.text("languages", &[]),
            subscribe_heading: l.text("subscribe-heading", &[]),
            subscribe_email: l.text("subscribe-email", &[]),
            subscribe_button: l.text("subscribe-button", &[]),
        };
        let template = PageTemplate {
            name: &state.name,
            indicator,
            description,
            open,
            past: s
                .incidents
                .iter()
                .filter(|i| i.status == UpdateStatus::Resolved)
                .map(|i| view(i, l))
                .collect(),
            maintenances: s
                .maintenances
                .iter()
                .filter(|m| !m.completed)
                .map(|m| MaintenanceView {
                    id: m.id.clone(),
                    name: m.name.clone(),
                    paragraphs: paragraphs(&m.body),
                    state: l.text(
                        if m.active {
                            "maintenance-in-progress"
                        } else {
                            "maintenance-scheduled"
                        },
                        &[],
                    ),
                    window: l.text(
                        "maintenance-window",
                        &[
                            ("start", m.start.format("%Y-%m-%d %H:%M").to_string().into()),
                            ("until", m.until.format("%Y-%m-%d %H:%M").to_string().into()),
                        ],
                    ),
                })
                .collect(),
            components,
            t,
            mail: state.takes_mail(),
            languages: i18n::languages()
                .into_iter()
                .map(|(tag, name)| (tag, name, tag == l.tag()))
                .collect(),
        };
        template
            .render()
            .unwrap_or_else(|e| format!("cannot render the status page: {e}"))
    };
    let body = published.keep_page(l.key(), Body::new(html, HTML));
    Ok(html_response(&body, l.tag(), &conditional))
}

/// GET `/status/page/events`: a `changed` event whenever what the page shows changes. At most
/// 256 streams, 8 from one address: a refused page refreshes every minute instead.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page/events", tag = "status page",
    responses(
        (status = 200, description = "Server-sent events: `changed` when the page changes", content(("text/event-stream"))),
        (status = 429, description = "Too many streams from this address (`Retry-After`)", body = crate::schema::Error),
        (status = 503, description = "Too many streams open (`Retry-After`)", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn events(
    State(state): State<Arc<StatusPageState>>,
    peer: crate::streams::Peer,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, crate::streams::Refused> {
    let slot = state.streams.try_open(crate::streams::address(peer))?;
    let first = state.snapshot().await.fingerprint;
    let open = (state, slot, first);
    let stream = futures::stream::unfold(open, |(state, slot, mut seen)| async move {
        loop {
            tokio::time::sleep(EVERY).await;
            let now = state.snapshot().await.fingerprint;
            if now != seen {
                seen = now;
                let event = SseEvent::default().event("changed").data("changed");
                return Some((Ok(event), (state, slot, seen)));
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
