//! How both stores keep an incident's lists: roots, affected and members as JSON text, so
//! that one row holds an incident whatever the store.

use std::collections::BTreeMap;

use status_core::CheckStatus;

use super::{Impact, Incident, IncidentUpdate, StoredIncident, UpdateStatus};

/// An incident's row, as both stores read and write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) id: i64,
    pub(crate) title: String,
    pub(crate) roots: String,
    pub(crate) affected: String,
    pub(crate) impact: String,
    pub(crate) started: i64,
    pub(crate) resolved: Option<i64>,
    pub(crate) updated: i64,
    pub(crate) members: String,
}

impl Row {
    pub(crate) fn of(i: &StoredIncident) -> Self {
        Self {
            id: i.id,
            title: i.title.clone(),
            roots: serde_json::to_string(&i.roots).unwrap_or_else(|_| "[]".into()),
            affected: serde_json::to_string(&i.affected).unwrap_or_else(|_| "{}".into()),
            impact: i.impact.as_str().to_owned(),
            started: i.started,
            resolved: i.resolved,
            updated: i.updated,
            members: serde_json::to_string(&i.members).unwrap_or_else(|_| "{}".into()),
        }
    }

    /// The incident; a row that does not parse (written by hand, or damaged) reads as one
    /// with what could be read, never as an error that would hide the others.
    pub(crate) fn stored(&self) -> StoredIncident {
        StoredIncident {
            id: self.id,
            title: self.title.clone(),
            roots: serde_json::from_str(&self.roots).unwrap_or_default(),
            affected: serde_json::from_str::<BTreeMap<String, CheckStatus>>(&self.affected)
                .unwrap_or_default(),
            impact: Impact::parse(&self.impact).unwrap_or(Impact::Major),
            started: self.started,
            resolved: self.resolved,
            updated: self.updated,
            members: serde_json::from_str(&self.members).unwrap_or_default(),
        }
    }

    pub(crate) fn incident(&self, updates: Vec<IncidentUpdate>) -> Incident {
        let s = self.stored();
        Incident {
            id: s.id,
            title: s.title,
            roots: s.roots,
            affected: s.affected,
            impact: s.impact,
            started: s.started,
            resolved: s.resolved,
            updated: s.updated,
            updates,
            postmortem: None,
        }
    }
}

/// An update's status from its word; an unknown word reads as `investigating`.
pub(crate) fn status(word: &str) -> UpdateStatus {
    UpdateStatus::parse(word).unwrap_or(UpdateStatus::Investigating)
}
