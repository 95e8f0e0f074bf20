//! The page inside another: `/status/widget.json`, what a product's site or help center shows
//! in a corner (the page's word, its components, what is happening now), made once per change
//! of what the page shows and served as the v2 documents are (entity tag, CORS for any
//! origin); and `/status/embed`, the same as a small page that only the origins the
//! application names may frame (none by default). The page itself stays unframable.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
use axum::http::HeaderValue;
use axum::response::Response;
use serde::Serialize;

use super::json::{Render, Which};
use super::wire::PageStatus;
use super::StatusPageState;
use crate::render::{Body, Conditional};
use crate::text::escape;

/// The embed's content type.
const HTML: &str = "text/html; charset=utf-8";

/// The widget document's index among the published documents.
pub(crate) const WIDGET: usize = 8;

/// `/status/widget.json`.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub(crate) struct WidgetDoc {
    page: WidgetPage,
    status: PageStatus,
    components: Vec<WidgetComponent>,
    /// The incidents not resolved.
    incidents: Vec<WidgetEvent>,
    /// The maintenances in progress or ahead.
    scheduled_maintenances: Vec<WidgetEvent>,
}

/// Which page, and where it is read.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
struct WidgetPage {
    name: String,
    url: String,
    updated_at: String,
}

/// A component as a widget shows it.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
struct WidgetComponent {
    id: String,
    name: String,
    /// As the v2 documents say it (`operational` … `under_maintenance`).
    status: &'static str,
    /// The group it is nested under.
    group_id: Option<String>,
}

/// An incident or a maintenance as a widget shows it: its name, where it stands, and where
/// to read it.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
struct WidgetEvent {
    id: String,
    name: String,
    status: &'static str,
    impact: &'static str,
    shortlink: String,
    updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduled_for: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduled_until: Option<String>,
}

/// The widget's document of what `r` renders.
pub(crate) fn document(r: &Render<'_>) -> Vec<u8> {
    let page = r.page();
    let event = |i: super::wire::IncidentBody| WidgetEvent {
        id: i.id,
        name: i.name,
        status: i.status,
        impact: i.impact,
        shortlink: i.shortlink,
        updated_at: i.updated_at,
        scheduled_for: i.scheduled_for,
        scheduled_until: i.scheduled_until,
    };
    let mut maintenances = r.maintenances(Which::Active);
    maintenances.extend(r.maintenances(Which::Upcoming));
    let doc = WidgetDoc {
        page: WidgetPage {
            name: page.name,
            url: page.url,
            updated_at: page.updated_at,
        },
        status: r.status(),
        components: r
            .components()
            .into_iter()
            .map(|c| WidgetComponent {
                id: c.id,
                name: c.name,
                status: c.status,
                group_id: c.group_id,
            })
            .collect(),
        incidents: r.incidents(true).into_iter().map(event).collect(),
        scheduled_maintenances: maintenances.into_iter().map(event).collect(),
    };
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// GET `/status/embed`: the widget as a small page (no script), for an `<iframe>` on the
/// origins the application names ([`Settings::embed_origins`](crate::Settings)); every
/// other origin, and by default all, may not frame it.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/embed", tag = "status page",
    responses(
        (status = 200, description = "The page's word, its components and what happens now, as a small page to frame", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn embed(
    State(state): State<Arc<StatusPageState>>,
    conditional: Conditional,
) -> Response {
    let published = state.published().await;
    let body = published.document(crate::published::EMBED, |snapshot| {
        let widget = document(&Render::new(&state, snapshot));
        Body::new(embed_html(&state.name, &widget), HTML)
    });
    let mut response = body.respond(axum::http::StatusCode::OK, &conditional);
    let headers = response.headers_mut();
    if let Ok(csp) = HeaderValue::from_str(&embed_csp(&state.embed_origins)) {
        headers.insert(CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The embed's policy: no script, its own styles, links that open the page, and framed only
/// by `origins`.
pub(crate) fn embed_csp(origins: &[String]) -> String {
    let ancestors = if origins.is_empty() {
        "'none'".to_owned()
    } else {
        origins.join(" ")
    };
    format!(
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; \
         frame-ancestors {ancestors}"
    )
}

/// Whether `origin` is one a policy may name: `scheme://host[:port]`, http or https, nothing
/// more (no path, no wildcard, no quote or space that would end the directive).
#[must_use]
pub fn is_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    matches!(scheme, "http" | "https")
        && !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'))
}

/// The embed's page, made of the widget's document.
fn embed_html(name: &str, widget: &[u8]) -> Vec<u8> {
    let doc: serde_json::Value = serde_json::from_slice(widget).unwrap_or_default();
    let text = |v: &serde_json::Value| escape(v.as_str().unwrap_or_default());
    let indicator = text(&doc["status"]["indicator"]);
    let mut html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{name}</title>\
         <style>body{{font:14px system-ui,sans-serif;margin:0;padding:8px;color:#222}}\
         .word{{font-weight:600;padding:6px 8px;border-radius:4px;background:#e7f6ec}}\
         .minor .word{{background:#fff4ce}}.major .word,.critical .word{{background:#fde7e9}}\
         ul{{list-style:none;padding:0;margin:8px 0}}li{{display:flex;justify-content:space-between;\
         padding:2px 0}}a{{color:inherit}}</style></head><body class=\"{indicator}\">\
         <p class=\"word\">{}</p>",
        text(&doc["status"]["description"]),
        name = escape(name),
    );
    let link = text(&doc["page"]["url"]);
    let mut events = String::new();
    for event in doc["incidents"]
        .as_array()
        .into_iter()
        .chain(doc["scheduled_maintenances"].as_array())
        .flatten()
    {
        events.push_str(&format!(
            "<li><a href=\"{}\" target=\"_blank\" rel=\"noopener\">{}</a><span>{}</span></li>",
            text(&event["shortlink"]),
            text(&event["name"]),
            text(&event["status"]).replace('_', " "),
        ));
    }
    if !events.is_empty() {
        html.push_str(&format!("<ul class=\"events\">{events}</ul>"));
    }
    html.push_str("<ul class=\"components\">");
    for c in doc["components"].as_array().into_iter().flatten() {
        html.push_str(&format!(
            "<li><span>{}</span><span>{}</span></li>",
            text(&c["name"]),
            text(&c["status"]).replace('_', " "),
        ));
    }
    html.push_str("</ul>");
    if !link.is_empty() {
        html.push_str(&format!(
            "<p><a href=\"{link}/status/page\" target=\"_blank\" rel=\"noopener\">{}</a></p>",
            escape(name)
        ));
    }
    html.push_str("</body></html>");
    html.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::{embed_csp, is_origin};

    #[test]
    fn only_named_origins_may_frame_the_embed() {
        assert!(embed_csp(&[]).ends_with("frame-ancestors 'none'"));
        let two = [
            "https://shop.example".to_owned(),
            "https://help.shop.example:8443".to_owned(),
        ];
        assert!(embed_csp(&two)
            .ends_with("frame-ancestors https://shop.example https://help.shop.example:8443"));
        for good in [
            "https://shop.example",
            "http://127.0.0.1:8080",
            "https://[::1]:443",
        ] {
            assert!(is_origin(good), "{good}");
        }
        for bad in [
            "shop.example",
            "https://shop.example/path",
            "https://*.shop.example",
            "https://a.example; script-src *",
            "https://a.example 'unsafe-inline'",
            "javascript://x",
            "https://",
        ] {
            assert!(!is_origin(bad), "{bad}");
        }
    }
}
