//! What the dashboard shows, computed in Rust so the templates only print (and escape).

use chrono::{DateTime, Utc};
use status_core::{CheckResult, CheckStatus, FeatureState, MinuteRecord, Registry, SystemReport};

pub(crate) use super::filter::{search_text, Filter};

mod parts;

use self::parts::{dependency, feature};
use crate::panel::{self, Panel, PanelRender};
use crate::present::Presentation;

/// A status as shown: a CSS class, a symbol and the word, so colour is never the only cue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Badge {
    pub(crate) class: &'static str,
    pub(crate) symbol: &'static str,
    pub(crate) label: &'static str,
}

pub(crate) fn badge(status: CheckStatus) -> Badge {
    match status {
        CheckStatus::Ok => Badge {
            class: "ok",
            symbol: "✔",
            label: "OK",
        },
        CheckStatus::Minor => Badge {
            class: "minor",
            symbol: "▲",
            label: "MINOR",
        },
        CheckStatus::Major => Badge {
            class: "major",
            symbol: "◆",
            label: "MAJOR",
        },
        CheckStatus::Outage => Badge {
            class: "outage",
            symbol: "✖",
            label: "OUTAGE",
        },
    }
}

/// A run of minutes of the same worst status on the last hour's timeline.
#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) class: &'static str,
    /// Minutes it covers, 1 to 60 (a CSS class `span-N` sizes it).
    pub(crate) span: usize,
    pub(crate) title: String,
}

#[derive(Debug)]
pub(crate) struct TransitionView {
    pub(crate) date: String,
    pub(crate) from: &'static str,
    pub(crate) to: &'static str,
    pub(crate) message: String,
}

#[derive(Debug)]
pub(crate) struct DependencyView {
    pub(crate) id: String,
    pub(crate) description: String,
    pub(crate) badge: Badge,
    pub(crate) urgency: &'static str,
    pub(crate) kind: String,
    pub(crate) message: String,
    pub(crate) last_checked: String,
    pub(crate) last_checked_iso: String,
    pub(crate) duration: String,
    pub(crate) in_state: String,
    pub(crate) timeline: Vec<Segment>,
    pub(crate) uptime_hour: String,
    pub(crate) uptime_day: String,
    pub(crate) flapping: bool,
    pub(crate) stale: bool,
    pub(crate) blocked_by: Vec<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) tags_joined: String,
    /// The probe groups it is in, space-separated.
    pub(crate) probe_groups: String,
    pub(crate) search: String,
    pub(crate) transitions: Vec<TransitionView>,
    pub(crate) error_kind: String,
    pub(crate) error_causes: Vec<String>,
    pub(crate) documentation_url: String,
    pub(crate) consecutive_failures: u32,
    /// Its mute in force, told in a sentence.
    pub(crate) mute: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) badge: Badge,
    pub(crate) dependencies: Vec<DependencyView>,
}

#[derive(Debug)]
pub(crate) struct OverrideView {
    pub(crate) state: &'static str,
    pub(crate) actor: String,
    pub(crate) reason: String,
    pub(crate) until: String,
}

#[derive(Debug)]
pub(crate) struct FeatureView {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) enabled: bool,
    pub(crate) reason: String,
    pub(crate) requirements: String,
    pub(crate) over: Option<OverrideView>,
    pub(crate) since: String,
}

#[derive(Debug)]
pub(crate) struct DrainView {
    pub(crate) reason: String,
    pub(crate) actor: String,
    pub(crate) since: String,
    pub(crate) until: String,
}

/// Everything the page shows.
#[derive(Debug)]
pub(crate) struct View {
    pub(crate) appname: String,
    pub(crate) hostname: String,
    pub(crate) badge: Badge,
    pub(crate) why: String,
    pub(crate) generated: String,
    pub(crate) drain: Option<DrainView>,
    pub(crate) groups: Vec<Group>,
    pub(crate) total: usize,
    pub(crate) shown: usize,
    pub(crate) features: Vec<FeatureView>,
    pub(crate) filter: Filter,
    pub(crate) tags: Vec<String>,
    /// The probe groups' names, in the order registered.
    pub(crate) probe_groups: Vec<String>,
    pub(crate) panels: Vec<PanelRender>,
}

pub(crate) fn human(d: chrono::Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

fn clock(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn percent(uptime: Option<f64>) -> String {
    uptime.map_or_else(|| "—".to_owned(), |u| format!("{:.2}%", u * 100.0))
}

/// Why the system is what it is, in a sentence.
fn why(report: &SystemReport) -> String {
    let culprits: Vec<String> = report
        .culprits()
        .map(|r| {
            let cause = if r.blocked_by().is_empty() {
                String::new()
            } else {
                let roots: Vec<_> = r.blocked_by().iter().map(ToString::to_string).collect();
                format!(", blocked by {}", roots.join(", "))
            };
            // What went wrong, the root of the error chain included (in the public view the
            // message is the status itself, and nothing is added).
            let message = r.message_with_cause();
            let what = if message == r.status().as_str() || message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            };
            format!(
                "{} ({}) is {}{cause}{what}",
                r.id(),
                r.urgency(),
                r.status()
            )
        })
        .collect();
    if culprits.is_empty() {
        "Every dependency is healthy enough.".to_owned()
    } else {
        format!("Because {}.", culprits.join("; "))
    }
}

/// What the page shows, through the router's one presentation path.
pub(crate) fn build(
    registry: &Registry,
    filter: Filter,
    present: &Presentation,
    panels: &[Panel],
) -> View {
    let report = present.report(registry.report());
    let now = registry.clock().wall();
    let mut tags: Vec<String> = report
        .results()
        .iter()
        .flat_map(|r| r.tags().iter().cloned())
        .collect();
    tags.sort();
    tags.dedup();
    let facts = registry.facts();
    let selected = facts.group(&filter.group);
    let mut groups: Vec<Group> = Vec::new();
    let mut shown = 0;
    // The report is sorted worst first, then by id.
    for r in report
        .results()
        .iter()
        .filter(|r| filter.keeps(r, selected))
    {
        shown += 1;
        let view = dependency(registry, present, now, r, &facts);
        match groups.last_mut() {
            Some(g) if g.badge.label == r.status().as_str() => g.dependencies.push(view),
            _ => groups.push(Group {
                badge: badge(r.status()),
                dependencies: vec![view],
            }),
        }
    }
    View {
        appname: if report.appname().is_empty() {
            "status".to_owned()
        } else {
            report.appname().to_string()
        },
        hostname: report.hostname().to_string(),
        badge: badge(report.condition()),
        why: why(&report),
        generated: clock(now),
        drain: registry.drain_state().map(|d| DrainView {
            reason: d.reason,
            actor: d.actor.unwrap_or_else(|| {
                // Who holds it when nobody signed: the source says (a shutdown is no operator).
                match d.holds.first().map(|h| h.source) {
                    Some(status_core::HoldSource::Shutdown) => "the graceful shutdown",
                    Some(status_core::HoldSource::Cull) => "the culler",
                    _ => "an operator",
                }
                .to_owned()
            }),
            since: clock(d.since),
            until: d.until.map_or_else(|| "until undrained".to_owned(), clock),
        }),
        groups,
        total: report.results().len(),
        shown,
        features: registry
            .features()
            .iter()
            .map(|f| feature(now, f))
            .collect(),
        filter,
        tags,
        probe_groups: facts.groups().iter().map(|g| g.name().to_owned()).collect(),
        panels: panels.iter().map(panel::render).collect(),
    }
}
