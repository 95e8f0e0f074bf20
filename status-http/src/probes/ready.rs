//! A readiness answer rendered: the system's, or a group's.

use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use status_core::{CheckStatus, DrainState, Readiness, ReadinessRule};

use super::{JSON, TEXT};
use crate::query::Format;
use crate::render::Body;
use crate::respond::{json_response, text_response};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReadinessBody<'a> {
    /// For a group's answer: the group.
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    ready: bool,
    condition: CheckStatus,
    startup_complete: bool,
    draining: Option<&'a DrainState>,
    reasons: &'a [String],
    /// With fleet-aware readiness: `instance` or `fleet`, the rule that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'static str>,
}

/// The body of a passing `readiness` (no reasons, no rule), with its `ETag`.
pub(super) fn ready_body(readiness: &Readiness, format: Format, group: &str) -> Body {
    if format == Format::Verbose {
        let text =
            format!("[+]condition ok\n[+]startup ok\n[+]drain ok\ngroup {group} check passed\n");
        return Body::new(text, TEXT);
    }
    let body = ReadinessBody {
        group: Some(group),
        ready: readiness.ready(),
        condition: readiness.condition(),
        startup_complete: readiness.startup_complete(),
        draining: readiness.drain(),
        reasons: readiness.reasons(),
        rule: None,
    };
    Body::new(
        serde_json::to_vec(&body).expect("a readiness body serializes"),
        JSON,
    )
}

/// `readiness` as JSON or as Kubernetes-style text: 200 when ready, else 503.
pub(super) fn readiness_answer(
    readiness: &Readiness,
    format: Format,
    group: Option<&str>,
) -> Response {
    let code = if readiness.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let rule = readiness.rule();
    let excused = match rule {
        Some(ReadinessRule::Fleet(why)) => Some(why),
        _ => None,
    };
    if format == Format::Verbose {
        let line = |ok: bool, name: &str, why: &str| {
            if ok {
                format!("[+]{name} ok\n")
            } else {
                format!("[-]{name} failed: {why}\n")
            }
        };
        let condition = readiness.condition();
        let mut text = line(
            !readiness.condition_fails(),
            "condition",
            condition.as_str(),
        );
        text += &line(readiness.startup_complete(), "startup", "not complete");
        let holds = readiness.drain().map(DrainState::reasons);
        text += &line(
            holds.is_none(),
            "drain",
            holds.as_deref().unwrap_or_default(),
        );
        if let Some(why) = excused {
            text += &format!("[+]fleet ok: {why}\n");
        }
        let verdict = if readiness.ready() {
            "passed"
        } else {
            "failed"
        };
        text += &match group {
            Some(group) => format!("group {group} check {verdict}\n"),
            None => format!("readyz check {verdict}\n"),
        };
        return text_response(code, text);
    }
    // On the wire, `reasons` also carries the fleet's sentence when it excused a failure.
    let reasons = match excused {
        Some(why) => std::slice::from_ref(why),
        None => readiness.reasons(),
    };
    json_response(
        code,
        JSON,
        &ReadinessBody {
            group,
            ready: readiness.ready(),
            condition: readiness.condition(),
            startup_complete: readiness.startup_complete(),
            draining: readiness.drain(),
            reasons,
            rule: rule.map(ReadinessRule::as_str),
        },
    )
}
