//! GET `/status/page`: the public status page, for the people who depend on the service.
//! It renders without JavaScript (and reloads itself every minute then), loads nothing from
//! outside, and with JavaScript follows `/status/page/events`.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::extract::State;
use axum::http::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use status_history::incident::UpdateStatus;

use super::{indicator, PublicIncident, Snapshot, StatusPageState};
use crate::dashboard::CSP;
use crate::error::ApiError;
use crate::history::tiles;

/// Days of tiles a component shows.
const DAYS: u32 = 90;
/// The most pages following the events at once: an unauthenticated path stays bounded.
const MAX_STREAMS: usize = 256;
/// How often a stream looks for a change.
const EVERY: Duration = Duration::from_secs(2);

struct ComponentRow {
    id: String,
    name: String,
    description: String,
    /// Nested under the public group before it.
    nested: bool,
    status: &'static str,
    class: &'static str,
    uptime: String,
    tiles: String,
}

struct IncidentView {
    id: i64,
    name: String,
    status: &'static str,
    impact: &'static str,
    updates: Vec<UpdateView>,
    /// The postmortem's paragraphs, and when it was published.
    postmortem: Option<(Vec<String>, String)>,
}

struct UpdateView {
    status: &'static str,
    at: String,
    body: String,
}

struct MaintenanceView {
    id: String,
    name: String,
    paragraphs: Vec<String>,
    active: bool,
    start: String,
    until: String,
}

#[derive(Template)]
#[template(path = "statuspage.html")]
struct PageTemplate<'a> {
    name: &'a str,
    indicator: &'static str,
    description: &'static str,
    open: Vec<IncidentView>,
    past: Vec<IncidentView>,
    maintenances: Vec<MaintenanceView>,
    components: Vec<ComponentRow>,
    days: u32,
    now: String,
}

fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M")
        .to_string()
}

fn view(i: &PublicIncident) -> IncidentView {
    IncidentView {
        id: i.id,
        name: i.name.clone(),
        status: i.status_word(),
        impact: i.impact,
        postmortem: i.postmortem.as_ref().map(|(body, at)| {
            let paragraphs = body
                .split("\n\n")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect();
            (paragraphs, when(*at))
        }),
        updates: i
            .updates
            .iter()
            .map(|u| UpdateView {
                status: u.status.as_str(),
                at: when(u.at),
                body: u.body.clone(),
            })
            .collect(),
    }
}

async fn rows(state: &StatusPageState, s: &Snapshot) -> Vec<ComponentRow> {
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
            status: match c.status() {
                "operational" => "Operational",
                "degraded_performance" => "Degraded performance",
                "partial_outage" => "Partial outage",
                "major_outage" => "Major outage",
                _ => "Under maintenance",
            },
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
                tiles::overall(&days)
            },
            tiles: tiles::tiles(&days),
        });
    }
    rows
}

/// GET `/status/page`.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page", tag = "status page",
    responses(
        (status = 200, description = "The public status page", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn page(State(state): State<Arc<StatusPageState>>) -> Result<Response, ApiError> {
    let s = state.snapshot().await;
    // The tiles change with the day, and today's with the hour: a render a minute at most.
    let fingerprint = s.fingerprint ^ u64::try_from(s.now.timestamp() / 60).unwrap_or_default();
    if let Some(html) = state.peek("page", fingerprint) {
        return Ok(html_response(html));
    }
    let components = rows(&state, &s).await;
    let html = state.cached("page", fingerprint, || {
        let (indicator, description) = indicator(s.condition);
        let template = PageTemplate {
            name: &state.name,
            indicator,
            description,
            open: s
                .incidents
                .iter()
                .filter(|i| i.resolved.is_none())
                .map(view)
                .collect(),
            past: s
                .incidents
                .iter()
                .filter(|i| i.status == UpdateStatus::Resolved)
                .map(view)
                .collect(),
            maintenances: s
                .maintenances
                .iter()
                .filter(|m| !m.completed)
                .map(|m| MaintenanceView {
                    id: m.id.clone(),
                    name: m.name.clone(),
                    paragraphs: m
                        .body
                        .split("\n\n")
                        .map(str::trim)
                        .filter(|p| !p.is_empty())
                        .map(str::to_owned)
                        .collect(),
                    active: m.active,
                    start: m.start.format("%Y-%m-%d %H:%M").to_string(),
                    until: m.until.format("%Y-%m-%d %H:%M").to_string(),
                })
                .collect(),
            components,
            days: DAYS,
            now: s.now.format("%Y-%m-%d %H:%M:%S").to_string(),
        };
        template
            .render()
            .unwrap_or_else(|e| format!("cannot render the status page: {e}"))
            .into_bytes()
    });
    Ok(html_response(html))
}

fn html_response(html: axum::body::Bytes) -> Response {
    (
        [
            (
                CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)),
            (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        ],
        html,
    )
        .into_response()
}

/// One open event stream, counted until dropped.
struct Slot(Arc<StatusPageState>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

/// GET `/status/page/events`: a `changed` event whenever what the page shows changes.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/page/events", tag = "status page",
    responses(
        (status = 200, description = "Server-sent events: `changed` when the page changes", content(("text/event-stream"))),
        (status = 503, description = "Too many streams open", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn events(
    State(state): State<Arc<StatusPageState>>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let open = state.streams.fetch_add(1, Ordering::AcqRel);
    let slot = Slot(Arc::clone(&state));
    if open >= MAX_STREAMS {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("too many status page event streams open (at most {MAX_STREAMS})"),
        ));
    }
    let first = state.snapshot().await.fingerprint;
    let stream = futures::stream::unfold((slot, first), |(slot, mut seen)| async move {
        loop {
            tokio::time::sleep(EVERY).await;
            let now = slot.0.snapshot().await.fingerprint;
            if now != seen {
                seen = now;
                let event = SseEvent::default().event("changed").data("changed");
                return Some((Ok(event), (slot, seen)));
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
