//! What an agent is told, read from the core's [`Facts`]: the system's condition, each
//! failure's root causes, and what each root cause takes down. Pure: no clock, no I/O, so that
//! every rule here is tested on facts made by hand.

use std::collections::{BTreeMap, BTreeSet};

use chrono::SecondsFormat;
use rmcp::schemars;
use serde::Serialize;
use status_core::{CheckResult, CheckStatus, DependencyFacts, Facts, FeatureState, Readiness};

use crate::answer::{capped, Omitted};

/// What a caller may read: an admin token reads check messages, a read-only one reads them
/// as the public view shows them (a failure's message replaced by its level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The admin token.
    Admin,
    /// The read-only token.
    Read,
}

impl Access {
    /// What an operator wrote (a mute's, an override's or a drain's reason) as this caller
    /// may read it: the read-only token reads `withheld` instead.
    pub(crate) fn said(self, text: &str, withheld: &str) -> String {
        match self {
            Self::Admin => text.to_owned(),
            Self::Read => withheld.to_owned(),
        }
    }

    /// A readiness reason as this caller may read it: a drain's reasons are an operator's
    /// words, and the read-only token reads only that it drains.
    pub(crate) fn readiness_reason(self, reason: &str) -> String {
        match self {
            Self::Read if reason.starts_with("draining") => "draining".to_owned(),
            _ => reason.to_owned(),
        }
    }

    /// `result`'s message as this caller may read it.
    pub(crate) fn message(self, result: &std::sync::Arc<CheckResult>) -> String {
        match self {
            Self::Admin => result.message_with_cause(),
            Self::Read => result.public().message().to_owned(),
        }
    }
}

/// An RFC 3339 time, to the second.
pub(crate) fn time(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// What one root cause takes down: the failures attributed to it, the features it turns off
/// and the groups it fails.
#[derive(Debug, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TakesDown {
    /// Failing dependencies whose failure it is (itself excluded).
    pub(crate) dependencies: Vec<String>,
    /// Features off because of it: a requirement it, or a failure attributed to it, fails.
    pub(crate) features: Vec<String>,
    /// Groups failing with it, or a failure attributed to it, among their members.
    pub(crate) groups: Vec<String>,
}

/// A root cause of what fails.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RootCause {
    pub(crate) id: String,
    #[schemars(with = "String")]
    pub(crate) level: CheckStatus,
    pub(crate) since: String,
    pub(crate) message: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) muted: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) maintenance: bool,
    pub(crate) takes_down: TakesDown,
}

/// A failing dependency, and what its failure is attributed to.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Failing {
    pub(crate) id: String,
    #[schemars(with = "String")]
    pub(crate) level: CheckStatus,
    /// Its weight in the system: its level capped by its urgency.
    #[schemars(with = "String")]
    pub(crate) impact: CheckStatus,
    pub(crate) since: String,
    pub(crate) root_causes: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) maintenance: bool,
}

/// A feature that is off, and why in words.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FeatureOff {
    pub(crate) name: String,
    pub(crate) reason: String,
}

/// A group below OK or failing its rule: `ready` is what its group summary answers
/// (`false`: 503).
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GroupFailing {
    pub(crate) name: String,
    #[schemars(with = "String")]
    pub(crate) level: CheckStatus,
    pub(crate) ready: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) maintenance: bool,
}

/// A mute in force.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Muted {
    pub(crate) id: String,
    pub(crate) reason: String,
    pub(crate) until: String,
}

/// Readiness as the probes answer it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct ReadinessAnswer {
    pub(crate) ready: bool,
    pub(crate) reasons: Vec<String>,
}

/// The `summary` tool's answer.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Summary {
    #[schemars(with = "String")]
    pub(crate) condition: CheckStatus,
    pub(crate) serving: bool,
    pub(crate) readiness: ReadinessAnswer,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) maintenance: bool,
    pub(crate) root_causes: Vec<RootCause>,
    pub(crate) failing: Vec<Failing>,
    pub(crate) features_off: Vec<FeatureOff>,
    pub(crate) groups_failing: Vec<GroupFailing>,
    pub(crate) muted: Vec<Muted>,
    pub(crate) dependencies: usize,
    pub(crate) at: String,
    #[serde(skip_serializing_if = "Omitted::is_empty")]
    pub(crate) omitted: Omitted,
}

/// The roots of `d`'s failure: its `blockedBy`, or itself when nothing above it fails.
fn roots_of(d: &DependencyFacts) -> Vec<String> {
    if d.blocked_by().is_empty() {
        vec![d.id().to_string()]
    } else {
        d.blocked_by().iter().map(ToString::to_string).collect()
    }
}

/// What `root` takes down, in `facts` with `features`.
pub(crate) fn takes_down(facts: &Facts, features: &[FeatureState], root: &str) -> TakesDown {
    let mut through: BTreeSet<&str> = facts
        .dependencies()
        .iter()
        .filter(|d| {
            d.level() != CheckStatus::Ok && d.blocked_by().iter().any(|r| r.as_str() == root)
        })
        .map(|d| d.id().as_str())
        .filter(|id| *id != root)
        .collect();
    let dependencies = through.iter().map(ToString::to_string).collect();
    through.insert(root);
    let system_fails = facts.level() != CheckStatus::Ok;
    let features = features
        .iter()
        .filter(|f| !f.enabled)
        .filter(|f| {
            f.requirements
                .iter()
                .filter(|r| !r.satisfied)
                .any(|r| match &r.dependency {
                    Some(id) => through.contains(id.as_str()),
                    None => system_fails,
                })
        })
        .map(|f| f.name.to_string())
        .collect();
    let groups = facts
        .groups()
        .iter()
        .filter(|g| !g.ready() || g.level() != CheckStatus::Ok)
        .filter(|g| {
            g.members().iter().any(|m| {
                through.contains(m.as_str())
                    && facts
                        .dependency(m.as_str())
                        .is_some_and(|d| d.impact() != CheckStatus::Ok)
            })
        })
        .map(|g| g.name().to_owned())
        .collect();
    TakesDown {
        dependencies,
        features,
        groups,
    }
}

/// The `summary` tool's answer from `facts`, `features` and `readiness`.
pub(crate) fn summary(
    facts: &Facts,
    features: &[FeatureState],
    readiness: &Readiness,
    access: Access,
) -> Summary {
    let mut omitted = Omitted::default();
    let failing_facts: Vec<&DependencyFacts> = facts
        .dependencies()
        .iter()
        .filter(|d| d.level() != CheckStatus::Ok)
        .collect();
    // Root causes, the worst impact first: the one an operator fixes first.
    let mut roots: BTreeMap<String, usize> = BTreeMap::new();
    for d in &failing_facts {
        for root in roots_of(d) {
            *roots.entry(root).or_default() += 1;
        }
    }
    // Ordered by the failures each accounts for (itself included), then its level; what
    // each takes down is worked out only for those shown.
    let mut ranked: Vec<(&DependencyFacts, usize)> = roots
        .iter()
        .filter_map(|(id, n)| facts.dependency(id).map(|d| (d, *n)))
        .collect();
    ranked.sort_by(|(a, n), (b, m)| {
        (m, b.level())
            .cmp(&(n, a.level()))
            .then_with(|| a.id().cmp(b.id()))
    });
    let ranked = capped(ranked, "rootCauses", &mut omitted);
    let root_causes: Vec<RootCause> = ranked
        .into_iter()
        .map(|(d, _)| RootCause {
            id: d.id().to_string(),
            level: d.level(),
            since: time(d.result().since()),
            message: access.message(d.result()),
            muted: d.muted(),
            maintenance: d.maintenance(),
            takes_down: takes_down(facts, features, d.id().as_str()),
        })
        .collect();
    let mut failing: Vec<Failing> = failing_facts
        .iter()
        .map(|d| Failing {
            id: d.id().to_string(),
            level: d.level(),
            impact: d.impact(),
            since: time(d.result().since()),
            root_causes: roots_of(d),
            maintenance: d.maintenance(),
        })
        .collect();
    failing.sort_by(|a, b| {
        (b.impact, b.level)
            .cmp(&(a.impact, a.level))
            .then(a.id.cmp(&b.id))
    });
    let features_off = features
        .iter()
        .filter(|f| !f.enabled)
        .map(|f| FeatureOff {
            name: f.name.to_string(),
            // An override's reason is an operator's words; a requirement unmet is not.
            reason: if f.override_.is_some() {
                access.said(&f.reason, "overridden by an operator")
            } else {
                f.reason.clone()
            },
        })
        .collect();
    let groups_failing = facts
        .groups()
        .iter()
        .filter(|g| !g.ready() || g.level() != CheckStatus::Ok)
        .map(|g| GroupFailing {
            name: g.name().to_owned(),
            level: g.level(),
            ready: g.ready(),
            maintenance: g.maintenance(),
        })
        .collect();
    let muted = facts
        .dependencies()
        .iter()
        .filter_map(|d| d.result().mute().filter(|m| m.active))
        .map(|m| Muted {
            id: m.dependency.to_string(),
            reason: access.said(&m.reason, "muted by an operator"),
            until: time(m.until),
        })
        .collect();
    Summary {
        condition: facts.level(),
        serving: facts.serving(),
        readiness: ReadinessAnswer {
            ready: readiness.ready(),
            reasons: capped(
                readiness
                    .reasons()
                    .iter()
                    .map(|r| access.readiness_reason(r))
                    .collect(),
                "readinessReasons",
                &mut omitted,
            ),
        },
        maintenance: facts.maintenance(),
        root_causes,
        failing: capped(failing, "failing", &mut omitted),
        features_off: capped(features_off, "featuresOff", &mut omitted),
        groups_failing: capped(groups_failing, "groupsFailing", &mut omitted),
        muted: capped(muted, "muted", &mut omitted),
        dependencies: facts.dependencies().len(),
        at: time(facts.report().timestamp()),
        omitted,
    }
}
