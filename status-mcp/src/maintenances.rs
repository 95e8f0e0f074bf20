//! The `maintenances` tool: the maintenances operators announced, in progress, ahead or
//! ended in the last days, called off or not, the soonest first, with the line that names
//! what is in progress. Who announced one is the admin token's to read.

use rmcp::model::CallToolResult;
use rmcp::schemars;
use serde::Serialize;

#[cfg(feature = "history")]
use crate::answer::{answer, capped};
use crate::answer::{refusal, Omitted};
use crate::diagnose::Access;
use crate::params::{MaintenancesParams, Sources};

/// A maintenance as the tool shows it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MaintenanceAnswer {
    id: i64,
    title: String,
    message: String,
    dependencies: Vec<String>,
    start: String,
    until: String,
    /// `scheduled`, `in_progress`, `completed` or `called_off`.
    status: &'static str,
    /// Who announced it (the admin token only).
    #[serde(skip_serializing_if = "Option::is_none")]
    actor: Option<String>,
}

/// The tool's answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MaintenancesAnswer {
    in_progress: usize,
    maintenances: Vec<MaintenanceAnswer>,
    #[serde(skip_serializing_if = "Omitted::is_empty")]
    omitted: Omitted,
}

#[cfg(not(feature = "history"))]
pub(crate) async fn maintenances(_: &Sources, _: MaintenancesParams, _: Access) -> CallToolResult {
    refusal("no history is kept here: maintenances need status-history")
}

#[cfg(feature = "history")]
pub(crate) async fn maintenances(
    sources: &Sources,
    params: MaintenancesParams,
    access: Access,
) -> CallToolResult {
    use crate::diagnose::time;
    let Some(history) = &sources.history else {
        return refusal("no history is kept here: maintenances need a durable history");
    };
    let days = params.days.unwrap_or(7);
    if !(1..=90).contains(&days) {
        return refusal(format!("`days` is 1 to 90, not {days}"));
    }
    let now = history.now();
    let since = now - chrono::Duration::days(i64::from(days));
    let announced = match history.announcements(since).await {
        Ok(announced) => announced,
        Err(e) => return refusal(format!("the history store did not answer: {e}")),
    };
    let shown: Vec<MaintenanceAnswer> = announced
        .into_iter()
        .map(|a| MaintenanceAnswer {
            status: match (a.cancelled, a.start <= now, a.until <= now) {
                (Some(_), _, _) => "called_off",
                (None, _, true) => "completed",
                (None, true, false) => "in_progress",
                (None, false, false) => "scheduled",
            },
            id: a.id,
            title: a.title,
            message: a.body,
            dependencies: a.dependencies,
            start: time(a.start),
            until: time(a.until),
            actor: a.actor.filter(|_| access == Access::Admin),
        })
        .collect();
    let in_progress: Vec<&str> = shown
        .iter()
        .filter(|m| m.status == "in_progress")
        .map(|m| m.title.as_str())
        .collect();
    let line = match (shown.len(), in_progress.as_slice()) {
        (0, _) => format!("no maintenance announced ahead or in the last {days} days"),
        (n, []) => format!("{n} maintenances announced, none in progress"),
        (n, titles) => format!(
            "{n} maintenances announced; in progress: {}",
            titles.join(", ")
        ),
    };
    let in_progress = in_progress.len();
    let mut omitted = Omitted::default();
    let maintenances = capped(shown, "maintenances", &mut omitted);
    answer(
        line,
        &MaintenancesAnswer {
            in_progress,
            maintenances,
            omitted,
        },
    )
}
