//! One story on the page: its banner, its components and its incidents agree at every moment.
//! A problem the components show before its incident is public (an engine's incident waits
//! two minutes, so that a blip is none) is said as one being investigated; a service that is
//! back while its incident stays open (its quiet period) says it is being watched, never
//! "All Systems Operational" over an open incident.

use status_core::CheckStatus;

use super::i18n::Locale;
use super::{indicator, Snapshot};

/// An incident as the page shows it, in its language.
pub(crate) struct IncidentView {
    pub(crate) id: i64,
    pub(crate) name: String,
    pub(crate) status: String,
    pub(crate) impact: &'static str,
    pub(crate) updates: Vec<UpdateView>,
    /// The postmortem's paragraphs, and when it was published.
    pub(crate) postmortem: Option<(Vec<String>, String)>,
    pub(crate) postmortem_label: String,
}

/// One update of an incident, as the page shows it.
pub(crate) struct UpdateView {
    pub(crate) status: String,
    pub(crate) at: String,
    pub(crate) body: String,
}

/// The banner's class (Statuspage's indicator) and words, told `open`, the incidents the
/// page shows as open (the provisional one included).
pub(crate) fn banner(s: &Snapshot, open: &[IncidentView], l: &Locale) -> (&'static str, String) {
    let (class, _) = indicator(s.condition);
    if s.condition == CheckStatus::Ok && !open.is_empty() {
        return (class, l.text("indicator-monitoring", &[]));
    }
    (class, l.text(&format!("indicator-{class}"), &[]))
}

/// The problem the components show while no incident about it is public yet: "investigating",
/// naming the components below OK (none under maintenance: an announced window is said in its
/// own section). `None` when an incident is open, or nothing is wrong but maintenance.
pub(crate) fn provisional(s: &Snapshot, open: usize, l: &Locale) -> Option<IncidentView> {
    if s.condition == CheckStatus::Ok || open > 0 {
        return None;
    }
    let below: Vec<_> = s
        .components
        .iter()
        .filter(|c| c.level != CheckStatus::Ok && !c.maintenance)
        .collect();
    let level = below.iter().map(|c| c.level).max().unwrap_or(s.condition);
    let under_maintenance = s.components.iter().any(|c| c.maintenance);
    if below.is_empty() && under_maintenance {
        return None;
    }
    let what = if below.is_empty() {
        l.text("the-service", &[])
    } else {
        let names: Vec<&str> = below.iter().map(|c| c.name.as_str()).collect();
        names.join(", ")
    };
    let say = |id: &str| l.text(id, &[("what", what.clone().into())]);
    let (impact, _) = indicator(level);
    let name = match impact {
        "critical" => say("incident-outage"),
        "major" => say("incident-disruption"),
        _ => say("incident-degraded"),
    };
    let investigating = l.text("update-investigating", &[]);
    Some(IncidentView {
        id: 0,
        name,
        status: investigating.clone(),
        impact,
        updates: vec![UpdateView {
            status: investigating,
            at: s.now.format("%Y-%m-%d %H:%M").to_string(),
            body: say("engine-opened"),
        }],
        postmortem: None,
        postmortem_label: l.text("postmortem", &[]),
    })
}
