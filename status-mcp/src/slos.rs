//! The `slos` tool: the service level objectives, their budgets, burn rates and alerts, as
//! `/healthcheck/slos` says them, with a line that names what burns.

use rmcp::model::CallToolResult;

#[cfg(feature = "history")]
use crate::answer::answer;
use crate::answer::refusal;
use crate::params::{SlosParams, Sources};

#[cfg(not(feature = "history"))]
pub(crate) async fn slos(_: &Sources, _: SlosParams) -> CallToolResult {
    refusal("no history is kept here: objectives need status-history")
}

#[cfg(feature = "history")]
pub(crate) async fn slos(sources: &Sources, params: SlosParams) -> CallToolResult {
    use status_history::objective::Severity;
    let Some(history) = &sources.history else {
        return refusal("no history is kept here: objectives need a durable history");
    };
    let reports = match &params.name {
        Some(name) => match history.slo_named(name).await {
            Ok(Some(report)) => vec![report],
            Ok(None) => {
                let names: Vec<&str> = history
                    .objectives()
                    .iter()
                    .map(status_history::objective::Objective::name)
                    .collect();
                let shown: String = name.chars().take(64).collect();
                return refusal(format!(
                    "no objective `{shown}`; declared: {}",
                    if names.is_empty() {
                        "none".to_owned()
                    } else {
                        names.join(", ")
                    }
                ));
            }
            Err(e) => return refusal(format!("the history store did not answer: {e}")),
        },
        None => match history.slos().await {
            Ok(reports) => reports,
            Err(e) => return refusal(format!("the history store did not answer: {e}")),
        },
    };
    let burning: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            let severity = [Severity::Page, Severity::Ticket]
                .into_iter()
                .find(|s| r.firing(*s))?;
            Some(format!(
                "{} {} ({:.0} % of its budget left)",
                r.name(),
                severity.as_str(),
                r.budget.remaining * 100.0
            ))
        })
        .collect();
    let line = if reports.is_empty() {
        "no objective is declared".to_owned()
    } else if burning.is_empty() {
        format!(
            "{} objectives, none burning its budget too fast",
            reports.len()
        )
    } else {
        format!(
            "{} objectives; alerting: {}",
            reports.len(),
            burning.join("; ")
        )
    };
    answer(line, &serde_json::json!({ "slos": reports }))
}
