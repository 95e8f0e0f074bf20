//! `GET /status/maintenances.ics` (feature `calendar`): the maintenances announced, as an
//! iCalendar feed (RFC 5545) a calendar subscribes to, each one an event with a stable UID, a
//! called-off one `STATUS:CANCELLED` so that subscribed calendars take it out. Made with the
//! `icalendar` crate, once per change of what the page shows.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use icalendar::{Calendar, Component, EventLike, EventStatus};

use super::StatusPageState;
use crate::published::Snapshot;
use crate::render::{Body, Conditional};

/// The feed's content type.
const ICS: &str = "text/calendar; charset=utf-8";

/// GET `/status/maintenances.ics`.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/maintenances.ics", tag = "status page",
    responses(
        (status = 200, description = "The maintenances announced, in force, ahead or of the last 90 days, as iCalendar (RFC 5545)", content_type = "text/calendar", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn ics(
    State(state): State<Arc<StatusPageState>>,
    conditional: Conditional,
) -> Response {
    let published = state.published().await;
    let body = published.document(crate::published::CALENDAR, |snapshot| {
        Body::new(calendar(&state, snapshot), ICS)
    });
    // As the feeds: calendars poll, and one holding this body's tag gets a 304.
    super::hot::respond(&body, &conditional)
}

/// The feed of `snapshot`'s maintenances, those called off included (cancelled).
fn calendar(state: &StatusPageState, snapshot: &Snapshot) -> Vec<u8> {
    let page = state
        .url
        .as_deref()
        .map(|url| format!("{}/status/page", url.trim_end_matches('/')));
    // The UIDs' domain: the page's host, else its name.
    let domain = state
        .url
        .as_deref()
        .and_then(|url| url.split("://").nth(1))
        .and_then(|rest| rest.split(['/', ':']).next())
        .filter(|host| !host.is_empty())
        .unwrap_or(&state.name)
        .to_owned();
    let mut calendar = Calendar::new();
    calendar.name(&format!("{} maintenance", state.name));
    for (m, cancelled) in snapshot
        .maintenances
        .iter()
        .map(|m| (m, false))
        .chain(snapshot.called_off.iter().map(|m| (m, true)))
    {
        let mut event = icalendar::Event::new();
        event
            .uid(&format!("{}@{domain}", m.id))
            .timestamp(m.set_at)
            .starts(m.start)
            .ends(m.until)
            .summary(&m.name)
            .description(&m.body)
            .status(if cancelled {
                EventStatus::Cancelled
            } else {
                EventStatus::Confirmed
            });
        if let Some(page) = &page {
            event.url(page);
        }
        calendar.push(event.done());
    }
    calendar.done().to_string().into_bytes()
}
