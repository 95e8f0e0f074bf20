//! `/history.atom` and `/history.rss`: the incidents and maintenances of the last 90 days,
//! newest first, each entry with every update in it, for feed readers, chat integrations
//! and other status pages, as Statuspage pages serve them. Written by the rust-syndication
//! crates (Atom 1.0, RSS 2.0), which escape what operators wrote.

use std::sync::Arc;

use atom_syndication as atom;
use axum::extract::State;
use axum::response::Response;
use chrono::{DateTime, TimeZone, Utc};

use super::{Maintenance, PublicIncident, Snapshot, StatusPageState};
use crate::render::Conditional;
use crate::text::escape;

/// How far back the feeds go.
pub(super) const FEED_DAYS: i64 = 90;
/// The most incidents a feed holds.
pub(super) const MAX_FEED_INCIDENTS: usize = 200;

/// One entry of either feed.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// Stable across renders and restarts: the incident's id in the store, a maintenance's
    /// start.
    id: String,
    title: String,
    link: String,
    published: DateTime<Utc>,
    updated: DateTime<Utc>,
    /// The updates, newest first, as HTML.
    html: String,
}

/// The page's address (its public URL, or relative to the feed's when none is set) and a
/// stable prefix for ids.
struct Base {
    page: String,
    id: String,
}

impl Base {
    fn of(state: &StatusPageState) -> Self {
        match state.url.as_deref().map(|u| u.trim_end_matches('/')) {
            Some(url) if !url.is_empty() => Self {
                page: format!("{url}/status/page"),
                id: format!("{url}/status/page"),
            },
            _ => Self {
                page: "/status/page".into(),
                id: format!("urn:status:{}", slug(&state.name)),
            },
        }
    }
}

/// `name` as a URN's part: lowercase letters, digits and `-`.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() {
        "page".into()
    } else {
        s
    }
}

/// `xml` without the characters XML 1.0 forbids (controls but tab and newlines, surrogates,
/// U+FFFE and U+FFFF), which the feed crates escape as they are: one of them in an
/// operator's words would make the feed unreadable to every reader for as long as it shows.
fn xml_chars(xml: String) -> String {
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
    if xml.chars().all(allowed) {
        return xml;
    }
    xml.chars().filter(|c| allowed(*c)).collect()
}

/// A time as people read it, in ISO form with its zone named: `2026-11-28 06:00 UTC`.
fn said(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn ms(t: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(t).single().unwrap_or_default()
}

/// `investigating` → `Investigating`.
fn capital(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn incident(base: &Base, i: &PublicIncident) -> Entry {
    let mut html = String::new();
    if let Some((body, at)) = &i.postmortem {
        html.push_str(&format!(
            "<p><strong>Postmortem</strong> ({})</p>",
            said(ms(*at))
        ));
        for paragraph in body.split("\n\n").filter(|p| !p.trim().is_empty()) {
            html.push_str(&format!(
                "<p>{}</p>",
                escape(paragraph).replace('\n', "<br>")
            ));
        }
    }
    for u in &i.updates {
        html.push_str(&format!(
            "<p><strong>{}</strong> ({})<br>{}</p>",
            capital(u.status.as_str()),
            said(ms(u.at)),
            escape(&u.body)
        ));
    }
    if !i.components.is_empty() {
        let names: Vec<String> = i.components.iter().map(|(_, n)| escape(n)).collect();
        html.push_str(&format!("<p>Affected: {}</p>", names.join(", ")));
    }
    Entry {
        id: format!("{}#incident-{}", base.id, i.id),
        title: format!("{} ({})", i.name, capital(i.status_word())),
        link: format!("{}#incident-{}", base.page, i.id),
        published: ms(i.started),
        updated: ms(i.last_changed()),
        html,
    }
}

fn maintenance(base: &Base, m: &Maintenance) -> Entry {
    let state = if m.completed {
        "Completed"
    } else if m.active {
        "In progress"
    } else {
        "Scheduled"
    };
    let names: Vec<String> = m.components.iter().map(|(_, n)| escape(n)).collect();
    let mut html = format!(
        "<p><strong>{state}</strong><br>From {} until {}.</p>",
        said(m.start),
        said(m.until)
    );
    for paragraph in m.body.split("\n\n").filter(|p| !p.trim().is_empty()) {
        html.push_str(&format!(
            "<p>{}</p>",
            escape(paragraph).replace('\n', "<br>")
        ));
    }
    html.push_str(&format!("<p>Affected: {}</p>", names.join(", ")));
    Entry {
        id: format!("{}#{}", base.id, m.id),
        title: format!("{} ({state})", m.name),
        link: format!("{}#{}", base.page, m.id),
        published: m.set_at,
        // Its state changes with the clock: an entry a reader sees move.
        updated: if m.completed {
            m.until
        } else if m.active {
            m.start.max(m.set_at)
        } else {
            m.set_at
        },
        html,
    }
}

/// Every entry, the newest first (by when it began; the latest id first for a tie).
fn entries(state: &StatusPageState, s: &Snapshot, incidents: &[PublicIncident]) -> Vec<Entry> {
    let base = Base::of(state);
    let mut out: Vec<Entry> = incidents.iter().map(|i| incident(&base, i)).collect();
    out.extend(s.maintenances.iter().map(|m| maintenance(&base, m)));
    out.sort_by(|a, b| b.published.cmp(&a.published).then(b.id.cmp(&a.id)));
    out
}

fn title(state: &StatusPageState) -> String {
    format!("{} status", state.name)
}

/// The Atom 1.0 document.
fn atom_feed(state: &StatusPageState, s: &Snapshot, entries: &[Entry]) -> String {
    let base = Base::of(state);
    let updated = entries.iter().map(|e| e.updated).max().unwrap_or(s.now);
    let link = |href: String, rel: &str, mime: &str| atom::Link {
        href,
        rel: rel.into(),
        mime_type: Some(mime.into()),
        ..atom::Link::default()
    };
    let feed = atom::Feed {
        title: atom::Text::plain(title(state)),
        id: format!("{}/history.atom", base.id),
        updated: updated.fixed_offset(),
        authors: vec![atom::Person {
            name: state.name.clone(),
            ..atom::Person::default()
        }],
        links: vec![
            link(base.page.clone(), "alternate", "text/html"),
            link(
                base.page.replace("/status/page", "/history.atom"),
                "self",
                "application/atom+xml",
            ),
        ],
        entries: entries
            .iter()
            .map(|e| atom::Entry {
                title: atom::Text::plain(e.title.clone()),
                id: e.id.clone(),
                updated: e.updated.fixed_offset(),
                published: Some(e.published.fixed_offset()),
                links: vec![link(e.link.clone(), "alternate", "text/html")],
                content: Some(atom::Content {
                    value: Some(e.html.clone()),
                    content_type: Some("html".into()),
                    ..atom::Content::default()
                }),
                ..atom::Entry::default()
            })
            .collect(),
        ..atom::Feed::default()
    };
    feed.to_string()
}

/// The RSS 2.0 document.
fn rss_feed(state: &StatusPageState, s: &Snapshot, entries: &[Entry]) -> String {
    let base = Base::of(state);
    let updated = entries.iter().map(|e| e.updated).max().unwrap_or(s.now);
    let channel = rss::Channel {
        title: title(state),
        link: base.page.clone(),
        description: format!("Incidents and maintenance of {}", state.name),
        last_build_date: Some(updated.to_rfc2822()),
        items: entries
            .iter()
            .map(|e| rss::Item {
                title: Some(e.title.clone()),
                link: Some(e.link.clone()),
                description: Some(e.html.clone()),
                guid: Some(rss::Guid {
                    value: e.id.clone(),
                    permalink: false,
                }),
                pub_date: Some(e.published.to_rfc2822()),
                ..rss::Item::default()
            })
            .collect(),
        ..rss::Channel::default()
    };
    channel.to_string()
}

async fn serve(
    state: &StatusPageState,
    kind: &'static str,
    mime: &'static str,
    render: fn(&StatusPageState, &Snapshot, &[Entry]) -> String,
    conditional: &Conditional,
) -> Response {
    let snapshot = state.snapshot().await;
    let kept = state.feed_incidents().await;
    // What the feed shows changes with the snapshot or the incidents read (a list is kept,
    // the same `Arc`, while the store answers the same).
    let fingerprint = snapshot.fingerprint ^ (Arc::as_ptr(&kept) as u64).rotate_left(17);
    let body = state.cached(kind, fingerprint, mime, || {
        let public: Vec<PublicIncident> = kept
            .iter()
            .map(|i| PublicIncident::of(i, &snapshot.components))
            .collect();
        xml_chars(render(
            state,
            &snapshot,
            &entries(state, &snapshot, &public),
        ))
    });
    // Feed readers poll: one holding this body's tag gets a 304.
    super::hot::respond(&body, conditional)
}

/// GET `/history.atom`: the incidents and maintenances of the last 90 days, as Atom 1.0.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/history.atom", tag = "status page",
    responses(
        (status = 200, description = "Incidents and maintenances of the last 90 days, the newest first, each with its updates (Atom 1.0)", content_type = "application/atom+xml", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn atom(
    State(state): State<Arc<StatusPageState>>,
    conditional: Conditional,
) -> Response {
    serve(
        &state,
        "/history.atom",
        "application/atom+xml; charset=utf-8",
        atom_feed,
        &conditional,
    )
    .await
}

/// GET `/history.rss`: the same as RSS 2.0.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/history.rss", tag = "status page",
    responses(
        (status = 200, description = "Incidents and maintenances of the last 90 days, the newest first, each with its updates (RSS 2.0)", content_type = "application/rss+xml", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn rss(
    State(state): State<Arc<StatusPageState>>,
    conditional: Conditional,
) -> Response {
    serve(
        &state,
        "/history.rss",
        "application/rss+xml; charset=utf-8",
        rss_feed,
        &conditional,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_words_are_escaped_and_times_name_their_zone() {
        assert_eq!(escape("<b>&'\""), "&lt;b&gt;&amp;&#39;&quot;");
        assert_eq!(said(ms(0)), "1970-01-01 00:00 UTC");
        assert_eq!(capital("investigating"), "Investigating");
        assert_eq!(slug("My Shop!"), "my-shop-");
    }

    #[test]
    fn characters_xml_forbids_are_left_out_of_a_feed() {
        let feed = "<title>down\u{FFFE} again\u{FFFF}\u{1}\u{B}</title>\t\r\n\u{1F6A8}";
        assert_eq!(
            xml_chars(feed.to_owned()),
            "<title>down again</title>\t\r\n\u{1F6A8}"
        );
        let fine = "<title>Größe ✓</title>".to_owned();
        assert_eq!(xml_chars(fine.clone()), fine);
    }
}
