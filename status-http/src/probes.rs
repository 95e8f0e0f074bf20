//! The probe endpoints: detailed, summary, liveness, readiness, startup, one dependency.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::json;
use status_core::{CheckResult, CheckStatus, DrainState, HistorySnapshot, SystemReport};

use crate::error::ApiError;
use crate::state::AppState;
use crate::view::{json_response, text_response, Format, View, HEALTH_JSON};

const JSON: &str = "application/json";

/// The report as this router shows it: `?exclude=` applied, stripped for a public view, and
/// under the router's application name.
fn report_for(state: &AppState, view: &View) -> Arc<SystemReport> {
    let report = state.registry.report();
    let mut report = if view.exclude.is_empty() {
        report
    } else {
        Arc::new(report.excluding(&view.excluded()))
    };
    if state.public_view {
        let public = Arc::make_mut(&mut report);
        public.results = public.results.iter().map(publish).collect();
    }
    if let Some(appname) = state.appname.as_ref().filter(|a| **a != report.appname) {
        Arc::make_mut(&mut report).appname.clone_from(appname);
    }
    report
}

/// A result without what the public view withholds: error chains and messages of failures.
fn publish(result: &Arc<CheckResult>) -> Arc<CheckResult> {
    if result.thrown.is_none() && result.status == CheckStatus::Ok {
        return Arc::clone(result);
    }
    let mut public = (**result).clone();
    public.thrown = None;
    if public.status != CheckStatus::Ok {
        public.message = public.status.to_string();
    }
    Arc::new(public)
}

#[derive(Serialize)]
struct Detailed<'a> {
    #[serde(flatten)]
    report: &'a SystemReport,
    draining: Option<DrainState>,
}

/// GET `/healthcheck`.
pub(crate) async fn detailed(State(state): State<Arc<AppState>>, view: View) -> Response {
    let report = report_for(&state, &view);
    let code = state.codes.code(report.condition, view.strict);
    match view.format {
        Format::Json => json_response(
            code,
            JSON,
            &Detailed {
                report: &report,
                draining: state.registry.drain_state(),
            },
        ),
        Format::HealthJson => json_response(code, HEALTH_JSON, &report.health_json()),
        Format::Verbose => text_response(code, report.verbose()),
    }
}

/// GET `/healthcheck/summary`: fails while draining.
pub(crate) async fn summary(State(state): State<Arc<AppState>>, view: View) -> Response {
    let report = report_for(&state, &view);
    let drain = state.registry.drain_state();
    let summary = report.summary().draining(drain.as_ref());
    let code = if drain.is_some() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        state.codes.code(report.condition, view.strict)
    };
    match view.format {
        Format::Json => json_response(code, JSON, &summary),
        Format::HealthJson => json_response(code, HEALTH_JSON, &report.health_json()),
        Format::Verbose => text_response(code, format!("condition {}\n", summary.condition())),
    }
}

/// GET `/healthcheck/live`: the process serves. Never depends on dependencies or draining.
pub(crate) async fn live(State(state): State<Arc<AppState>>, view: View) -> Response {
    match view.format {
        Format::Verbose => text_response(StatusCode::OK, "[+]ping ok\nlivez check passed\n".into()),
        _ => json_response(
            StatusCode::OK,
            JSON,
            &json!({ "live": true, "hostname": state.registry.hostname() }),
        ),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Readiness {
    ready: bool,
    condition: CheckStatus,
    startup_complete: bool,
    draining: Option<DrainState>,
    reasons: Vec<String>,
}

/// GET `/healthcheck/ready`: not OUTAGE (not anything but OK with `?strict`), not draining,
/// startup done.
pub(crate) async fn ready(State(state): State<Arc<AppState>>, view: View) -> Response {
    let report = report_for(&state, &view);
    let startup_complete = state.registry.startup_complete();
    let draining = state.registry.drain_state();
    let failing = if view.strict {
        report.condition != CheckStatus::Ok
    } else {
        report.condition == CheckStatus::Outage
    };
    let mut reasons = Vec::new();
    if failing {
        let culprits: Vec<String> = report
            .culprits()
            .map(|r| format!("{} is {}", r.id, r.status))
            .collect();
        reasons.push(format!(
            "system is {}: {}",
            report.condition,
            culprits.join(", ")
        ));
    }
    if !startup_complete {
        reasons.push("startup not complete: some dependencies were never checked".to_owned());
    }
    if let Some(drain) = &draining {
        reasons.push(format!("draining: {}", drain.reason));
    }
    let ready = reasons.is_empty();
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if view.format == Format::Verbose {
        let mut text = String::new();
        let line = |ok: bool, name: &str, why: String| {
            if ok {
                format!("[+]{name} ok\n")
            } else {
                format!("[-]{name} failed: {why}\n")
            }
        };
        text += &line(!failing, "condition", report.condition.to_string());
        text += &line(startup_complete, "startup", "not complete".to_owned());
        text += &line(
            draining.is_none(),
            "drain",
            draining
                .as_ref()
                .map(|d| d.reason.clone())
                .unwrap_or_default(),
        );
        text += if ready {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        };
        return text_response(code, text);
    }
    json_response(
        code,
        JSON,
        &Readiness {
            ready,
            condition: report.condition,
            startup_complete,
            draining,
            reasons,
        },
    )
}

/// GET `/healthcheck/startup`: every dependency has been checked once.
pub(crate) async fn startup(State(state): State<Arc<AppState>>) -> Response {
    let report = state.registry.report();
    let pending: Vec<&str> = report
        .results
        .iter()
        .filter(|r| !r.checked)
        .map(|r| r.id.as_str())
        .collect();
    let complete = pending.is_empty();
    let code = if complete {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(
        code,
        JSON,
        &json!({ "startupComplete": complete, "pending": pending }),
    )
}

#[derive(Serialize)]
struct DependencyBody<'a> {
    #[serde(flatten)]
    result: &'a CheckResult,
    history: HistorySnapshot,
}

/// GET `/healthcheck/dependencies/{id}`: one result with its history; its code follows its
/// status.
pub(crate) async fn dependency(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    view: View,
) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("dependency", &id);
    let result = state.registry.result(&id).ok_or_else(not_found)?;
    let history = state.registry.history(&id).map_err(|_| not_found())?;
    let result = if state.public_view {
        publish(&result)
    } else {
        result
    };
    let code = state.codes.code(result.status, view.strict);
    Ok(json_response(
        code,
        JSON,
        &DependencyBody {
            result: &result,
            history,
        },
    ))
}
