//! Shields-style SVG badges: `/badge/{name}.svg` (a component's level) and
//! `/badge/{name}/uptime.svg?window=30d`. Public-view safe: only components (groups and
//! dependencies tagged `public`, or `system`) have one, and a badge says a level or a
//! percentage, nothing else. Each carries an ETag of its body: a client that has it gets a
//! 304.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::CACHE_CONTROL;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use super::{Component, Snapshot, StatusPageState};
use crate::error::ApiError;
use crate::query::Params;
use crate::render::{Body, Conditional};

/// A two-part flat badge, as shields.io draws them: `label` on grey, `value` on `color`.
pub(crate) fn svg(label: &str, value: &str, color: &str) -> String {
    // Verdana 11 px is about 6.5 px a character on average; shields measures, we estimate.
    let width = |s: &str| 10 + (s.chars().count() as u32 * 65).div_ceil(10);
    let (lw, vw) = (width(label), width(value));
    let total = lw + vw;
    let (label, value) = (escape(label), escape(value));
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" aria-label="{label}: {value}"><title>{label}: {value}</title><linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{vw}" height="20" fill="{color}"/><rect width="{total}" height="20" fill="url(#s)"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11"><text x="{lx}" y="15" fill="#010101" fill-opacity=".3">{label}</text><text x="{lx}" y="14">{label}</text><text x="{vx}" y="15" fill="#010101" fill-opacity=".3">{value}</text><text x="{vx}" y="14">{value}</text></g></svg>"##,
        lx = lw / 2,
        vx = lw + vw / 2,
    )
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The component a badge names: a public group, a dependency tagged `public`, or `system`.
async fn find(state: &StatusPageState, name: &str) -> Result<Component, ApiError> {
    // What is published: a read lock while it holds, as the level badges are answered.
    let snapshot = Arc::clone(&state.published().await.snapshot);
    if name == "system" {
        return Ok(Component {
            id: "system".into(),
            name: "system".into(),
            description: None,
            level: snapshot.condition,
            maintenance: false,
            since: snapshot.now,
            created: snapshot.now,
            group_id: None,
            children: Vec::new(),
            members: Vec::new(),
            series: status_history::Series::System,
        });
    }
    snapshot
        .components
        .iter()
        .find(|c| {
            c.id.strip_prefix("group-")
                .or_else(|| c.id.strip_prefix("dependency-"))
                == Some(name)
        })
        .cloned()
        .ok_or_else(|| no_badge(name))
}

/// A badge's answer: its bytes, or 304 to a client holding them; checked again each time.
fn answer(body: &Body, conditional: &Conditional) -> Response {
    let mut response = body.respond(StatusCode::OK, conditional);
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// GET `/badge/{file}`: `{name}.svg`, the component's level.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/badge/{file}", tag = "status page",
    params(("file" = String, Path, description = "`{name}.svg`: a group, a dependency tagged `public`, or `system`")),
    responses(
        (status = 200, description = "A shields-style badge of its level", content_type = "image/svg+xml", body = String),
        (status = 304, description = "Not modified since the ETag given"),
        (status = 404, description = "No such component", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn level(
    State(state): State<Arc<StatusPageState>>,
    Path(file): Path<String>,
    conditional: Conditional,
) -> Result<Response, ApiError> {
    let name = file.strip_suffix(".svg").ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no badge {file:?}: badges end in .svg"),
        )
    })?;
    // Made once per change of what is published, then served as it is.
    let published = state.published().await;
    let body = published
        .badge(name, |s| {
            let (label, level, maintenance) = level_of(s, name, &state.name)?;
            let (value, color) = if maintenance {
                ("maintenance", "#007ec6")
            } else {
                match level {
                    status_core::CheckStatus::Ok => ("operational", "#4c1"),
                    status_core::CheckStatus::Minor => ("degraded", "#dfb317"),
                    status_core::CheckStatus::Major => ("partial outage", "#fe7d37"),
                    status_core::CheckStatus::Outage => ("major outage", "#e05d44"),
                }
            };
            Some(Body::new(svg(label, value, color), SVG))
        })
        .ok_or_else(|| no_badge(name))?;
    Ok(answer(&body, &conditional))
}

/// A badge's content type.
const SVG: &str = "image/svg+xml";

/// The name customers read for the component a badge names (its name on the page; the
/// page's own for `system`, never a code name), its level, and whether it is under
/// maintenance.
fn level_of<'a>(
    s: &'a Snapshot,
    name: &str,
    page: &'a str,
) -> Option<(&'a str, status_core::CheckStatus, bool)> {
    if name == "system" {
        return Some((page, s.condition, false));
    }
    s.components
        .iter()
        .find(|c| {
            c.id.strip_prefix("group-")
                .or_else(|| c.id.strip_prefix("dependency-"))
                == Some(name)
        })
        .map(|c| (c.name.as_str(), c.level, c.maintenance))
}

fn no_badge(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no badge named {name:?}: badges are for groups, dependencies tagged \
             \"public\", and \"system\""
        ),
    )
}

/// `?window=`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WindowQuery {
    window: Option<String>,
}

/// A window such as `30d`, `24h` or `90m` (status-history's one reading of a span), 30 days
/// when not given.
fn window(query: &WindowQuery) -> Result<chrono::Duration, ApiError> {
    match &query.window {
        None => Ok(chrono::Duration::days(30)),
        Some(text) => {
            status_history::span(text).map_err(|e| ApiError::bad_request(format!("window: {e}")))
        }
    }
}

/// GET `/badge/{name}/uptime.svg`: the component's uptime over `window` (30 days).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/badge/{name}/uptime.svg", tag = "status page",
    params(
        ("name" = String, Path, description = "A group, a dependency tagged `public`, or `system`"),
        ("window" = Option<String>, Query, nullable = false, pattern = "^(([1-9][0-9]?|[1-3][0-9]{2}|400)d|([1-9][0-9]{0,2}|[1-8][0-9]{3}|9[0-5][0-9]{2}|9600)h|[1-9][0-9]{0,4}m)$", description = "`30d` when not given; days, hours or minutes, up to 400 days")),
    responses(
        (status = 200, description = "A shields-style badge of its uptime", content_type = "image/svg+xml", body = String),
        (status = 304, description = "Not modified since the ETag given"),
        (status = 400, description = "A window that is not one", body = crate::schema::Error),
        (status = 404, description = "No such component, or no history kept", body = crate::schema::Error),
        (status = 503, description = "The history store is not available", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn uptime(
    State(state): State<Arc<StatusPageState>>,
    Path(name): Path<String>,
    Params(query): Params<WindowQuery>,
    conditional: Conditional,
) -> Result<Response, ApiError> {
    let span = window(&query)?;
    let c = find(&state, &name).await?;
    let history = status_http_core::history::kept(state.history.as_ref())?;
    // Made at most once a minute per component and window, one at a time: a public route
    // a crowd (or a README's readers) may call, each call otherwise a read of the store.
    // By the window as written: `24h` and `1d` cover the same span under two labels.
    let window = query.window.as_deref().unwrap_or("30d");
    let key = (c.id.clone(), window.to_owned());
    let kept = |now: tokio::time::Instant| {
        let uptimes = crate::sync::lock(&state.uptimes);
        uptimes
            .get(&key)
            .filter(|(at, _)| now.duration_since(*at) < super::UPTIME_FRESH)
            .map(|(_, body)| body.clone())
    };
    if let Some(body) = kept(tokio::time::Instant::now()) {
        return Ok(answer(&body, &conditional));
    }
    let _making = state.making_uptime.lock().await;
    let now = tokio::time::Instant::now();
    if let Some(body) = kept(now) {
        return Ok(answer(&body, &conditional));
    }
    let report = history
        .uptime_over(c.series.clone(), span)
        .await
        .map_err(status_http_core::history::rejection)?;
    let label = format!("uptime {window}");
    let (value, color) = match report.uptime {
        None => ("no data".to_owned(), "#9f9f9f"),
        Some(u) => {
            let pct = u * 100.0;
            let color = if pct >= 99.9 {
                "#4c1"
            } else if pct >= 99.0 {
                "#97ca00"
            } else if pct >= 95.0 {
                "#dfb317"
            } else {
                "#e05d44"
            };
            (format!("{}%", trim(pct)), color)
        }
    };
    let body = Body::new(svg(&label, &value, color), SVG);
    let mut uptimes = crate::sync::lock(&state.uptimes);
    uptimes.retain(|_, (at, _)| now.duration_since(*at) < super::UPTIME_FRESH);
    if uptimes.len() < super::UPTIMES_KEPT {
        uptimes.insert(key, (now, body.clone()));
    }
    drop(uptimes);
    Ok(answer(&body, &conditional))
}

/// 99.95 → `99.95`, 100 → `100`, 97.123 → `97.12`: two decimals at most, never rounded up to
/// 100 when it is not.
fn trim(pct: f64) -> String {
    let floored = (pct * 100.0).floor() / 100.0;
    let s = format!("{floored:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_is_never_rounded_up_to_a_hundred() {
        assert_eq!(trim(100.0), "100");
        assert_eq!(trim(99.999), "99.99");
        assert_eq!(trim(97.1), "97.1");
    }

    fn of(raw: &str) -> Result<chrono::Duration, ApiError> {
        let uri: axum::http::Uri = format!("/badge/x/uptime.svg?{raw}").parse().unwrap();
        let axum::extract::Query(query) = axum::extract::Query::try_from_uri(&uri)
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        window(&query)
    }

    #[test]
    fn windows_are_days_hours_or_minutes_up_to_400_days() {
        assert_eq!(of("window=24h").unwrap(), chrono::Duration::hours(24));
        assert_eq!(of("").unwrap(), chrono::Duration::days(30));
        for bad in [
            "window=0d",
            "window=401d",
            "window=3w",
            "window=d",
            "window=-1d",
            "x=1",
            "window=1d&window=2d",
        ] {
            assert!(of(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn labels_are_escaped() {
        let s = svg("<a>", "b&c", "#fff");
        assert!(s.contains("&lt;a&gt;") && s.contains("b&amp;c") && !s.contains("<a>"));
    }
}
