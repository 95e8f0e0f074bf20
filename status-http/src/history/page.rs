//! The dashboard's memory: `GET /status/history` (90 day tiles for the system, each group
//! and each dependency, a page at a time) and `GET /status/history/{id}` (one dependency:
//! its tiles, uptime over 1 h to 90 days, a 24-hour chart of check duration, and its
//! transitions). Both render whole without JavaScript; the audit trail, admin only, is
//! fetched with the operator's token by the page's script.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::header::{CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use chrono::{Duration, Utc};
use status_history::Series;

use super::tiles::{blank, overall, percent, tiles};
use super::{DaysQuery, HistoryState};
use crate::error::ApiError;
use crate::query::{number, Params};

/// Days of tiles when not asked, and at most.
const DAYS: u32 = 90;
const MAX_DAYS: u32 = 400;
/// Rows of a page when not asked, and at most.
const LIMIT: usize = 100;
const MAX_LIMIT: usize = 1000;

/// A row of tiles.
pub(crate) struct Row {
    kind: &'static str,
    name: String,
    link: Option<String>,
    uptime: String,
    /// The row's tiles, as HTML ([`tiles`]).
    tiles: String,
}

#[derive(Template)]
#[template(path = "history.html")]
struct HistoryPage {
    days: u32,
    objectives: Vec<super::objectives::Objective>,
    rows: Vec<Row>,
    shown: usize,
    total: usize,
    next: Option<String>,
    unavailable: Option<String>,
}

#[derive(Template)]
#[template(path = "history_dependency.html")]
struct DependencyPage {
    id: String,
    days: u32,
    row: Row,
    figures: Vec<(&'static str, String)>,
    chart_top: String,
    lines: Vec<super::chart::Line>,
    transitions: Vec<[String; 4]>,
    unavailable: Option<String>,
}

pub(super) fn html(page: &impl Template) -> Result<Response, ApiError> {
    let body = page.render().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot render the page: {e}"),
        )
    })?;
    let mut response = Html(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(crate::dashboard::CSP),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}

/// `?days=&offset=&limit=`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OverviewQuery {
    days: Option<String>,
    offset: Option<String>,
    limit: Option<String>,
}

/// GET `/status/history`: a page of tiles.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/history", tag = "history",
    params(
        ("days" = Option<u32>, Query, nullable = false, minimum = 1, maximum = 400, description = "Days of tiles (90)"),
        ("offset" = Option<usize>, Query, nullable = false, description = "Dependencies to skip"),
        ("limit" = Option<usize>, Query, nullable = false, minimum = 1, maximum = 1000, description = "Dependencies on the page (100)"),
    ),
    responses(
        (status = 200, description = "Day tiles of the system, each group and a page of dependencies", content_type = "text/html", body = String),
        (status = 400, description = "A parameter out of range", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn overview(
    State(state): State<Arc<HistoryState>>,
    Params(query): Params<OverviewQuery>,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    let days = number("days", query.days.as_deref(), DAYS, 1, MAX_DAYS)?;
    let offset = number("offset", query.offset.as_deref(), 0usize, 0, usize::MAX)?;
    let limit = number("limit", query.limit.as_deref(), LIMIT, 1, MAX_LIMIT)?;
    let mut rows = Vec::new();
    let mut unavailable = None;
    let mut total = 0;
    match history.days(Series::System, days).await {
        Ok(system) => rows.push(Row {
            kind: "system",
            name: "system".to_owned(),
            link: None,
            uptime: overall(&system),
            tiles: tiles(&system),
        }),
        Err(e) => unavailable = Some(e.to_string()),
    }
    if unavailable.is_none() {
        for kind in ["group", "dependency"] {
            // Every registered member is shown, with or without data yet.
            let names: Vec<String> = if kind == "group" {
                state
                    .registry
                    .groups()
                    .iter()
                    .map(|g| g.group().name().as_str().to_owned())
                    .collect()
            } else {
                let mut ids: Vec<String> = state
                    .registry
                    .dependencies()
                    .iter()
                    .map(|d| d.id().as_str().to_owned())
                    .collect();
                ids.sort();
                total = ids.len();
                ids.into_iter().skip(offset).take(limit).collect()
            };
            match state.tiles.rows(history, kind, days, DAYS, &names).await {
                Ok(drawn) => {
                    for (name, (tiles, uptime)) in names.into_iter().zip(drawn) {
                        rows.push(Row {
                            kind,
                            link: (kind == "dependency").then(|| format!("history/{name}")),
                            uptime,
                            tiles,
                            name,
                        });
                    }
                }
                Err(e) => unavailable = Some(e.to_string()),
            }
        }
    }
    let shown = rows.iter().filter(|r| r.kind == "dependency").count();
    let next = (offset + shown < total).then(|| {
        format!(
            "history?days={days}&offset={}&limit={limit}",
            offset + shown
        )
    });
    html(&HistoryPage {
        days,
        objectives: super::objectives::objectives(&state).await,
        rows,
        shown,
        total,
        next,
        unavailable,
    })
}

/// GET `/status/history/{id}`: one dependency's memory.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/history/{id}", tag = "history",
    params(
        ("id" = String, Path, description = "The dependency"),
        ("days" = Option<u32>, Query, nullable = false, minimum = 1, maximum = 400, description = "Days of tiles (90)"),
    ),
    responses(
        (status = 200, description = "The dependency's tiles, uptime, check durations over 24 hours and transitions", content_type = "text/html", body = String),
        (status = 400, description = "A parameter out of range", body = crate::schema::Error),
        (status = 404, description = "No such dependency, or no history kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn dependency(
    State(state): State<Arc<HistoryState>>,
    Path(id): Path<String>,
    Params(query): Params<DaysQuery>,
) -> Result<Response, ApiError> {
    let history = state.history()?;
    if !state.registry.contains(&id) {
        return Err(ApiError::not_found("dependency", &id));
    }
    let days = number("days", query.days.as_deref(), DAYS, 1, MAX_DAYS)?;
    let series = Series::Dependency(id.clone());
    let now = history.now();
    let mut unavailable = None;
    let tiles_of = match history.days(series.clone(), days).await {
        Ok(d) => d,
        Err(e) => {
            unavailable = Some(e.to_string());
            blank(history, days)
        }
    };
    let mut figures = Vec::new();
    for (label, back) in [
        ("Uptime 1 h", Duration::hours(1)),
        ("Uptime 24 h", Duration::hours(24)),
        ("Uptime 30 d", Duration::days(30)),
        ("Uptime 90 d", Duration::days(90)),
    ] {
        let answer = history.uptime(series.clone(), now - back, now).await;
        figures.push((
            label,
            answer.map_or_else(
                |e| e.to_string(),
                |r| format!("{} (SLA {})", percent(r.uptime), percent(r.sla)),
            ),
        ));
    }
    let (chart_top, lines) = super::chart::duration_chart(history, &series, now).await;
    let transitions = history
        .transitions(series, 50)
        .await
        .unwrap_or_default()
        .into_iter()
        .rev()
        .map(|t| {
            let message = if state.public {
                String::new()
            } else {
                t.message
            };
            [
                chrono::TimeZone::timestamp_millis_opt(&Utc, t.at)
                    .single()
                    .map_or_else(String::new, |at| {
                        at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
                    }),
                t.from.map_or_else(|| "—".to_owned(), |l| l.to_string()),
                t.to.to_string(),
                message,
            ]
        })
        .collect();
    html(&DependencyPage {
        row: Row {
            kind: "dependency",
            name: id.clone(),
            link: None,
            uptime: overall(&tiles_of),
            tiles: tiles(&tiles_of),
        },
        id,
        days,
        figures,
        chart_top,
        lines,
        transitions,
        unavailable,
    })
}
