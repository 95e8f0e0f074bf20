//! The objectives on the operators' history page: each one's budget left and a burn chart
//! (an SVG the server draws: a bar per window, the workbook's thresholds as lines), and the
//! printable SLA report, `GET /status/sla` (what a person saves as PDF from the
//! browser). Both render whole without JavaScript.

use std::fmt::Write as _;
use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use status_history::objective::{target_text, Severity, SloReport, BURN_WINDOWS};
use status_history::sla::SlaRow;

use super::tiles::percent;
use super::HistoryState;
use crate::error::ApiError;
use crate::query::Params;

/// The top of a burn chart's scale: a rate above it is drawn at the top, its figure said.
const CHART_TOP: f64 = 20.0;

/// An objective as the history page shows it.
pub(crate) struct Objective {
    pub(crate) name: String,
    pub(crate) target: String,
    pub(crate) objective: String,
    pub(crate) window: String,
    /// What is left of the budget, clamped to 0..=1 for the meter, and as said.
    pub(crate) left: f64,
    pub(crate) left_text: String,
    pub(crate) bad: String,
    /// `page`, `ticket`, or empty.
    pub(crate) alert: &'static str,
    /// The burn chart, as SVG.
    pub(crate) chart: String,
}

/// The objectives of `state`'s history the page shows (in the public view, those on public
/// targets), as last read.
pub(crate) async fn objectives(state: &HistoryState) -> Vec<Objective> {
    let Some(history) = &state.history else {
        return Vec::new();
    };
    let Ok(reports) = history.slos().await else {
        return Vec::new();
    };
    reports
        .iter()
        .filter(|r| state.shows(r.target()))
        .map(|r| Objective {
            name: r.name().to_owned(),
            target: target_text(r.target()),
            objective: format!("{}", r.objective.objective() * 100.0),
            window: r.objective.window_text().to_owned(),
            left: r.budget.remaining.clamp(0.0, 1.0),
            left_text: format!("{:.1} %", r.budget.remaining * 100.0),
            bad: format!(
                "{} bad of {} observed",
                duration_text(r.bad_ms),
                duration_text(r.observed_ms)
            ),
            alert: [Severity::Page, Severity::Ticket]
                .into_iter()
                .find(|s| r.firing(*s))
                .map_or("", Severity::as_str),
            chart: burn_chart(r),
        })
        .collect()
}

/// `ms` as people read it: `3 min 20 s`, `2 h 5 min`.
fn duration_text(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// A bar per burn window (5m to 3d), scaled 0 to 20, with lines at the workbook's factors
/// (1, 6, 14.4); each bar titled with its rate.
fn burn_chart(r: &SloReport) -> String {
    let y = |rate: f64| 78.0 - rate.min(CHART_TOP) / CHART_TOP * 76.0;
    let mut svg = String::from(
        "<svg viewBox=\"0 0 300 96\" role=\"img\" class=\"burn\" aria-label=\"Burn rate per window\">",
    );
    for factor in [1.0, 6.0, 14.4] {
        let _ = write!(
            svg,
            "<line class=\"threshold\" x1=\"0\" x2=\"300\" y1=\"{0:.1}\" y2=\"{0:.1}\"/><text class=\"factor\" x=\"298\" y=\"{1:.1}\" text-anchor=\"end\">{factor}×</text>",
            y(factor),
            y(factor) - 2.0
        );
    }
    for (i, w) in BURN_WINDOWS.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let x = 10.0 + i as f64 * 48.0;
        let rate = r.burn_rate(w.name);
        let said = rate.map_or_else(|| "nothing observed".to_owned(), |r| format!("{r:.2}"));
        let top = y(rate.unwrap_or(0.0));
        let class = match rate {
            Some(r) if r > 14.4 => "bar outage",
            Some(r) if r > 1.0 => "bar major",
            _ => "bar ok",
        };
        let _ = write!(
            svg,
            "<rect class=\"{class}\" x=\"{x:.0}\" y=\"{top:.1}\" width=\"30\" height=\"{:.1}\"><title>{}: {said}</title></rect><text class=\"window\" x=\"{:.0}\" y=\"92\" text-anchor=\"middle\">{}</text>",
            78.0 - top,
            w.name,
            x + 15.0,
            w.name
        );
    }
    svg.push_str("</svg>");
    svg
}

#[derive(Template)]
#[template(path = "history_sla.html")]
struct SlaPage {
    from: String,
    to: String,
    rows: Vec<[String; 9]>,
    unavailable: Option<String>,
}

/// `?from=&to=`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SlaPageQuery {
    from: Option<String>,
    to: Option<String>,
}

/// GET `/status/sla`: the SLA report as a printable page (30 days to now when no
/// window is asked).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/sla", tag = "history",
    params(
        ("from" = Option<String>, Query, nullable = false, format = DateTime, description = "The window's start (30 days before `to`)"),
        ("to" = Option<String>, Query, nullable = false, format = DateTime, description = "The window's end (now)"),
    ),
    responses(
        (status = 200, description = "The SLA report, a row per dependency, group and objective, ready to print", content_type = "text/html", body = String),
        (status = 400, description = "A window that is not one", body = crate::schema::Error),
        (status = 404, description = "No history kept", body = crate::schema::Error),
        (status = "default", description = "A rejected request (405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn sla_page(
    State(state): State<Arc<HistoryState>>,
    Params(query): Params<SlaPageQuery>,
) -> Result<Response, ApiError> {
    let (from, to, rows) = state
        .sla_rows(query.from.as_deref(), query.to.as_deref())
        .await?;
    let (rows, unavailable) = match rows {
        Ok(rows) => (rows, None),
        Err(e) if e.is_invalid() => return Err(ApiError::bad_request(e.to_string())),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let shown: Vec<&SlaRow> = rows
        .iter()
        .filter(|r| match r.kind {
            "dependency" => state.shows(&status_history::Series::Dependency(r.name.clone())),
            "group" => state.shows(&status_history::Series::Group(r.name.clone())),
            _ => r.target.as_deref().is_none_or(|t| {
                status_history::objective::parse_target(t).is_ok_and(|s| state.shows(&s))
            }),
        })
        .collect();
    let (from, to) = rows.first().map_or((from, to), |r| (r.from, r.to));
    let when = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%d %H:%M UTC").to_string();
    super::page::html(&SlaPage {
        from: when(from),
        to: when(to),
        rows: shown
            .iter()
            .map(|r| {
                [
                    r.kind.to_owned(),
                    r.name.clone(),
                    r.target.clone().unwrap_or_default(),
                    r.objective
                        .map(|o| format!("{} %", o * 100.0))
                        .unwrap_or_default(),
                    duration_text(r.observed_ms),
                    percent(r.good_share),
                    duration_text(r.bad_ms),
                    r.incidents_opened.to_string(),
                    match r.met {
                        Some(true) => "met".to_owned(),
                        Some(false) => "missed".to_owned(),
                        None => duration_text(r.excluded_ms) + " excluded",
                    },
                ]
            })
            .collect(),
        unavailable,
    })
}
