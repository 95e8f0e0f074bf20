//! The tools that read beyond the facts: the history (transitions, uptime, incidents) and the
//! fleet's view. Each refusal is a tool error the model reads (`isError`), naming what would
//! have been accepted.

use rmcp::model::CallToolResult;
#[cfg(any(feature = "history", feature = "fleet"))]
#[cfg(any(feature = "history", feature = "fleet"))]
use rmcp::schemars;
#[cfg(any(feature = "history", feature = "fleet"))]
use serde::Serialize;
use status_core::Registry;

#[cfg(feature = "fleet")]
use crate::answer::capped;
use crate::answer::refusal;
#[cfg(any(feature = "history", feature = "fleet"))]
use crate::answer::{answer, Omitted};
use crate::diagnose::{time, Access};
use crate::params::{IncidentsParams, Sources, UptimeParams};
use crate::why::Change;

/// Transitions `why` shows, at most.
const TRANSITIONS: usize = 10;
/// Updates of an incident shown, at most (the latest).
#[cfg(feature = "history")]
const UPDATES: usize = 5;

/// "No dependency `id`", with the ids there are.
pub(crate) fn unknown(registry: &Registry, id: &str) -> String {
    let mut known: Vec<String> = registry
        .dependencies()
        .iter()
        .map(|d| d.id().to_string())
        .collect();
    known.sort();
    let more = known.len().saturating_sub(crate::answer::MAX_ITEMS);
    known.truncate(crate::answer::MAX_ITEMS);
    let mut said = format!("no dependency `{}`; known: {}", clip(id), known.join(", "));
    if more > 0 {
        said.push_str(&format!(", and {more} more"));
    }
    said
}

/// A name a caller gave, cut for an answer (it could be anything, of any length).
fn clip(name: &str) -> String {
    let clipped: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    if clipped.len() < name.len() {
        format!("{clipped}…")
    } else {
        clipped
    }
}

/// The latest transitions of `id`: from the durable history when kept (across restarts), else
/// from the registry's memory. Their messages only for an admin.
pub(crate) async fn transitions(sources: &Sources, id: &str, access: Access) -> Vec<Change> {
    let message = |m: String| {
        if access == Access::Admin {
            m
        } else {
            String::new()
        }
    };
    #[cfg(feature = "history")]
    if let Some(history) = &sources.history {
        let series = status_history::Series::Dependency(id.to_owned());
        match history.transitions(series, TRANSITIONS).await {
            Ok(records) => {
                return records
                    .into_iter()
                    .map(|t| Change {
                        at: chrono::DateTime::from_timestamp_millis(t.at)
                            .map_or_else(String::new, time),
                        from: t.from,
                        to: t.to,
                        message: message(t.message),
                    })
                    .collect();
            }
            // The store is down: what this process remembers still answers.
            Err(e) => tracing::debug!(error = %e, "mcp: the history's transitions unavailable"),
        }
    }
    let Ok(snapshot) = sources.registry.history(id) else {
        return Vec::new();
    };
    let skip = snapshot.transitions.len().saturating_sub(TRANSITIONS);
    snapshot
        .transitions
        .into_iter()
        .skip(skip)
        .map(|t| Change {
            at: time(t.at),
            from: t.from,
            to: t.to,
            message: message(t.message),
        })
        .collect()
}

/// A window back from now: status-history's one reading of a span (`30m`, `24h`, `30d`).
#[cfg(feature = "history")]
fn window(text: &str) -> Result<chrono::Duration, String> {
    status_history::span(text).map_err(|_| {
        format!(
            "`window` is a number and m, h or d (30m, 24h, 30d), up to {}d, not `{}`",
            status_history::MAX_SPAN_DAYS,
            clip(text.trim())
        )
    })
}

#[cfg(not(feature = "history"))]
pub(crate) async fn uptime(_: &Sources, _: UptimeParams) -> CallToolResult {
    refusal("no history is kept here: uptime needs status-history")
}

#[cfg(feature = "history")]
pub(crate) async fn uptime(sources: &Sources, params: UptimeParams) -> CallToolResult {
    use status_history::Series;
    let Some(history) = &sources.history else {
        return refusal("no history is kept here: uptime needs a durable history");
    };
    let series = match (params.dependency, params.group) {
        (Some(_), Some(_)) => return refusal("give `dependency` or `group`, not both"),
        (Some(id), None) if sources.registry.contains(&id) => Series::Dependency(id),
        (Some(id), None) => return refusal(unknown(&sources.registry, &id)),
        (None, Some(name)) if sources.registry.facts().group(&name).is_some() => {
            Series::Group(name)
        }
        (None, Some(name)) => {
            let facts = sources.registry.facts();
            let names: Vec<&str> = facts
                .groups()
                .iter()
                .map(status_core::GroupFacts::name)
                .collect();
            return refusal(format!(
                "no group `{}`; known: {}",
                clip(&name),
                names.join(", ")
            ));
        }
        (None, None) => Series::System,
    };
    let span = params.window.as_deref().unwrap_or("24h");
    let back = match window(span) {
        Ok(back) => back,
        Err(why) => return refusal(why),
    };
    match history.uptime_over(series, back).await {
        Ok(report) => {
            let percent = |share: Option<f64>| {
                share.map_or_else(|| "unknown".to_owned(), |s| format!("{:.3}%", s * 100.0))
            };
            let line = format!(
                "{}: uptime {}, SLA {} over {span} ({} checks, {} failed)",
                match report.series.name() {
                    "" => report.series.kind().to_owned(),
                    name => format!("{} {name}", report.series.kind()),
                },
                percent(report.uptime),
                percent(report.sla),
                report.checks,
                report.failures
            );
            answer(line, &report)
        }
        Err(e) if e.is_invalid() => refusal(format!("`window` {span}: {e}")),
        Err(e) => refusal(format!("the history store did not answer: {e}")),
    }
}

/// An incident as `incidents` shows it.
#[cfg(feature = "history")]
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct IncidentAnswer {
    id: i64,
    title: String,
    status: &'static str,
    impact: &'static str,
    roots: Vec<String>,
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    affected: std::collections::BTreeMap<String, status_core::CheckStatus>,
    started: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolved: Option<String>,
    updates: Vec<UpdateAnswer>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    postmortem: bool,
}

#[cfg(feature = "history")]
#[derive(Serialize, schemars::JsonSchema)]
struct UpdateAnswer {
    at: String,
    status: &'static str,
    message: String,
}

#[cfg(feature = "history")]
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct IncidentsAnswer {
    open: usize,
    incidents: Vec<IncidentAnswer>,
    #[serde(skip_serializing_if = "Omitted::is_empty")]
    omitted: Omitted,
}

#[cfg(not(feature = "history"))]
pub(crate) async fn incidents(_: &Sources, _: IncidentsParams) -> CallToolResult {
    refusal("no history is kept here: incidents need status-history")
}

#[cfg(feature = "history")]
pub(crate) async fn incidents(sources: &Sources, params: IncidentsParams) -> CallToolResult {
    let Some(history) = &sources.history else {
        return refusal("no history is kept here: incidents need a durable history");
    };
    let days = params.days.unwrap_or(7);
    if !(1..=90).contains(&days) {
        return refusal(format!("`days` is 1 to 90, not {days}"));
    }
    let limit = params.limit.unwrap_or(10);
    if !(1..=50).contains(&limit) {
        return refusal(format!("`limit` is 1 to 50, not {limit}"));
    }
    let since = history.now() - chrono::Duration::days(i64::from(days));
    let ms = |at: i64| chrono::DateTime::from_timestamp_millis(at).map_or_else(String::new, time);
    let found = match history.incidents(since, limit as usize).await {
        Ok(found) => found,
        Err(e) => return refusal(format!("the history store did not answer: {e}")),
    };
    let mut omitted = Omitted::default();
    let mut cut = 0;
    let incidents: Vec<IncidentAnswer> = found
        .into_iter()
        .map(|i| {
            let status = i.status().as_str();
            let skip = i.updates.len().saturating_sub(UPDATES);
            cut += skip;
            IncidentAnswer {
                id: i.id,
                title: i.title.clone(),
                status,
                impact: i.impact.as_str(),
                roots: i.roots,
                affected: i.affected,
                started: ms(i.started),
                resolved: i.resolved.map(ms),
                updates: i
                    .updates
                    .into_iter()
                    .skip(skip)
                    .map(|u| UpdateAnswer {
                        at: ms(u.at),
                        status: u.status.as_str(),
                        message: u.message,
                    })
                    .collect(),
                postmortem: i.postmortem.is_some(),
            }
        })
        .collect();
    if cut > 0 {
        crate::answer::count(&mut omitted, "updates", cut);
    }
    let open = incidents.iter().filter(|i| i.resolved.is_none()).count();
    let mut line = format!(
        "{open} open, {} resolved in the last {days} days",
        incidents.len() - open
    );
    for i in incidents.iter().filter(|i| i.resolved.is_none()).take(3) {
        line.push_str(&format!(
            "; #{} {} ({}) since {}",
            i.id, i.title, i.status, i.started
        ));
    }
    answer(
        line,
        &IncidentsAnswer {
            open,
            incidents,
            omitted,
        },
    )
}

/// The fleet tool's answer.
#[cfg(feature = "fleet")]
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FleetAnswer {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stale: bool,
    datacenters: Vec<DatacenterAnswer>,
    failing: Vec<crate::why::FleetRow>,
    #[serde(skip_serializing_if = "Omitted::is_empty")]
    omitted: Omitted,
}

#[cfg(feature = "fleet")]
#[derive(Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct DatacenterAnswer {
    datacenter: String,
    healthy: bool,
    serving: usize,
    fresh: usize,
}

#[cfg(not(feature = "fleet"))]
pub(crate) fn fleet(_: &Sources) -> CallToolResult {
    refusal("this instance has no fleet view")
}

#[cfg(feature = "fleet")]
pub(crate) fn fleet(sources: &Sources) -> CallToolResult {
    let Some(fleet) = &sources.fleet else {
        return refusal("this instance has no fleet view (it is not part of a fleet)");
    };
    // An agent reading what fails across the fleet looks at it, as a person at its page.
    fleet.source.look();
    let view = fleet.source.view();
    let mut omitted = Omitted::default();
    let failing: Vec<crate::why::FleetRow> = view
        .what_fails()
        .into_iter()
        .map(crate::FleetWatch::row)
        .collect();
    let datacenters: Vec<DatacenterAnswer> = view
        .datacenters
        .iter()
        .map(|d| DatacenterAnswer {
            datacenter: d.datacenter.clone(),
            healthy: d.healthy,
            serving: d.serving,
            fresh: d.fresh,
        })
        .collect();
    let unhealthy: Vec<&str> = datacenters
        .iter()
        .filter(|d| !d.healthy)
        .map(|d| d.datacenter.as_str())
        .collect();
    let mut line = format!("{} data centers", datacenters.len());
    if unhealthy.is_empty() {
        line.push_str(", all healthy");
    } else {
        line.push_str(&format!(", unhealthy: {}", unhealthy.join(", ")));
    }
    if view.stale {
        line.push_str(" (stale view: the store is unreachable)");
    }
    if view.failing_partial {
        line.push_str(
            " (what fails: this instance's own failing dependencies only, the whole list with \
             its next beat: ask again in a few seconds)",
        );
    }
    let shared: Vec<String> = failing
        .iter()
        .filter(|r| r.shared)
        .take(3)
        .map(|r| format!("{} in {}", r.dependency, r.datacenter))
        .collect();
    if !shared.is_empty() {
        line.push_str(&format!("; shared failures: {}", shared.join(", ")));
    }
    let failing = capped(failing, "failing", &mut omitted);
    let datacenters = capped(datacenters, "datacenters", &mut omitted);
    answer(
        line,
        &FleetAnswer {
            stale: view.stale,
            datacenters,
            failing,
            omitted,
        },
    )
}

#[cfg(test)]
#[cfg(feature = "history")]
mod tests {
    use super::window;

    #[test]
    fn windows_are_a_number_and_a_unit() {
        assert_eq!(window("30m"), Ok(chrono::Duration::minutes(30)));
        assert_eq!(window(" 24h "), Ok(chrono::Duration::hours(24)));
        assert_eq!(window("7d"), Ok(chrono::Duration::days(7)));
        for bad in [
            "",
            "h",
            "0h",
            "-1d",
            "1w",
            "1.5h",
            "99999999999d",
            "401d",
            "1é",
            "é",
        ] {
            assert!(window(bad).is_err(), "{bad:?} accepted");
        }
    }
}
