//! The dashboard's filters: by status, urgency, tag, probe group and text.

use serde::Deserialize;
use status_core::{CheckResult, GroupFacts};

/// Filters, from the query string (the page works without JavaScript) or typed live.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Filter {
    #[serde(default)]
    pub(crate) status: String,
    #[serde(default)]
    pub(crate) urgency: String,
    #[serde(default)]
    pub(crate) tag: String,
    #[serde(default)]
    pub(crate) group: String,
    #[serde(default)]
    pub(crate) q: String,
}

impl Filter {
    /// Whether `r` is shown; `group` is the probe group the filter names, if it exists (a
    /// group that does not keeps nothing).
    pub(crate) fn keeps(&self, r: &CheckResult, group: Option<&GroupFacts>) -> bool {
        let eq = |want: &str, have: &str| want.is_empty() || want.eq_ignore_ascii_case(have);
        eq(&self.status, r.status().as_str())
            && eq(&self.urgency, r.urgency().as_str())
            && (self.tag.is_empty() || r.tags().iter().any(|t| t == &self.tag))
            && (self.group.is_empty() || group.is_some_and(|g| g.members().contains(r.id())))
            && (self.q.is_empty() || search_text(r).contains(&self.q.to_lowercase()))
    }
}

/// What the text filter searches in: id, description, message, kind and tags, lower-case.
pub(crate) fn search_text(r: &CheckResult) -> String {
    format!(
        "{} {} {} {} {}",
        r.id(),
        r.description(),
        r.message(),
        r.kind(),
        r.tags().join(" ")
    )
    .to_lowercase()
}
