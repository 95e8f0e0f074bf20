//! Incidents: opened and resolved by the engine, keyed by their root causes, with the
//! updates operators post.
//!
//! - [`IncidentTracker`] (pure, told the time and what the registry says) decides when an
//!   incident opens, what it covers, and when it resolves, and says so as [`IncidentFact`]s.
//! - A store merges each fact into the incidents it keeps ([`merge`]): by root cause, so that
//!   the instances of a fleet writing to one PostgreSQL database share one incident for a
//!   shared root, which resolves when every instance that joined it has seen it resolve.

pub(crate) mod codec;
mod merge;
mod track;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use status_core::CheckStatus;

pub use self::merge::{merge, sweep, MemberState, Merged, StoredIncident, GONE_AFTER};
pub use self::track::{
    IncidentTracker, Scene, SceneDependency, DEFAULT_QUIET, MAX_INCIDENTS_PER_HOUR, REAFFIRM_EVERY,
};

/// How bad an incident is, in the words of Statuspage's `impact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Impact {
    /// Nothing (an incident operators opened with no effect).
    None,
    /// A MINOR level somewhere it covers.
    Minor,
    /// A MAJOR or OUTAGE level somewhere it covers.
    Major,
    /// An OUTAGE of a Required dependency: the service is down.
    Critical,
}

impl Impact {
    /// Its word: `none`, `minor`, `major` or `critical`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Impact::None => "none",
            Impact::Minor => "minor",
            Impact::Major => "major",
            Impact::Critical => "critical",
        }
    }

    /// The impact of its word.
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "none" => Impact::None,
            "minor" => Impact::Minor,
            "major" => Impact::Major,
            "critical" => Impact::Critical,
            _ => return None,
        })
    }
}

/// Where an incident stands, as its updates say (Statuspage's incident statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateStatus {
    /// It is known and looked at (the status of an incident the engine opens).
    Investigating,
    /// The cause is known.
    Identified,
    /// A fix is in; it is watched.
    Monitoring,
    /// It is over.
    Resolved,
}

impl UpdateStatus {
    /// Its word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateStatus::Investigating => "investigating",
            UpdateStatus::Identified => "identified",
            UpdateStatus::Monitoring => "monitoring",
            UpdateStatus::Resolved => "resolved",
        }
    }

    /// The status of its word.
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        Some(match word {
            "investigating" => UpdateStatus::Investigating,
            "identified" => UpdateStatus::Identified,
            "monitoring" => UpdateStatus::Monitoring,
            "resolved" => UpdateStatus::Resolved,
            _ => return None,
        })
    }
}

/// What an update is: who said it and why. A field, so that a reader (the status page)
/// never searches the engine's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateKind {
    /// The engine opened the incident.
    Opened,
    /// The engine reopened it: its roots failed again within the quiet time.
    Reopened,
    /// The engine resolved it: everything it covers was healthy for the quiet time.
    Resolved,
    /// An operator said it.
    Operator,
}

impl UpdateKind {
    /// Its word, as kept.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            UpdateKind::Opened => "opened",
            UpdateKind::Reopened => "reopened",
            UpdateKind::Resolved => "resolved",
            UpdateKind::Operator => "operator",
        }
    }

    /// The kind of its word; an unknown word (a newer writer's) reads as an operator's, the
    /// kind that shows its message as it is.
    #[must_use]
    pub fn parse(word: &str) -> Self {
        match word {
            "opened" => UpdateKind::Opened,
            "reopened" => UpdateKind::Reopened,
            "resolved" => UpdateKind::Resolved,
            _ => UpdateKind::Operator,
        }
    }
}

/// One update of an incident: what an operator said (or the engine, when it opened or
/// resolved it), and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentUpdate {
    /// Its id in the store.
    pub id: i64,
    /// When it was said (ms since the epoch).
    pub at: i64,
    /// The status it gives the incident.
    pub status: UpdateStatus,
    /// What was said.
    pub message: String,
    /// Who said it: an operator, or `None` for the engine.
    pub actor: Option<String>,
    /// What it is: opened, reopened or resolved by the engine, or an operator's.
    pub kind: UpdateKind,
}

/// An incident as kept: what it covers, since when, its updates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    /// Its id in the store.
    pub id: i64,
    /// What it is called: its root causes and how bad.
    pub title: String,
    /// The root causes it is keyed by (dependency ids, sorted).
    pub roots: Vec<String>,
    /// Every dependency it covered, with the worst level each reached.
    pub affected: BTreeMap<String, CheckStatus>,
    /// The worst impact it reached.
    pub impact: Impact,
    /// When it started (ms since the epoch).
    pub started: i64,
    /// When it was resolved, if it was.
    pub resolved: Option<i64>,
    /// When it last changed.
    pub updated: i64,
    /// Its updates, oldest first.
    pub updates: Vec<IncidentUpdate>,
    /// What was learned, once it was resolved, if an operator wrote it.
    #[serde(default)]
    pub postmortem: Option<Postmortem>,
}

/// An incident's postmortem: what happened and what will change, written by an operator
/// once it was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Postmortem {
    /// The text, for the page (paragraphs apart by blank lines).
    pub body: String,
    /// When it was published (ms since the epoch): its last writing.
    pub at: i64,
    /// Who wrote it.
    pub actor: Option<String>,
}

impl Incident {
    /// Where it stands: resolved, or the status of its latest update (investigating when it
    /// has none).
    #[must_use]
    pub fn status(&self) -> UpdateStatus {
        if self.resolved.is_some() {
            return UpdateStatus::Resolved;
        }
        match self.updates.last().map(|u| u.status) {
            Some(UpdateStatus::Resolved) | None => UpdateStatus::Investigating,
            Some(status) => status,
        }
    }
}

/// Whether the tracker sees an incident failing or resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Something it covers fails, or recovered less than the quiet time ago.
    Open,
    /// Everything it covers has been healthy for the quiet time, since `at` (ms).
    Resolved {
        /// When it resolved.
        at: i64,
    },
}

/// What a tracker says of one incident, whole each time (a write that is retried or
/// repeated changes nothing more): the store merges it into the incident it keeps for the
/// same root causes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncidentFact {
    /// The root causes (dependency ids, sorted).
    pub roots: Vec<String>,
    /// Every dependency covered so far, with the worst level each reached.
    pub affected: BTreeMap<String, CheckStatus>,
    /// The worst impact so far.
    pub impact: Impact,
    /// When it started (ms).
    pub started: i64,
    /// When this was said (ms).
    pub at: i64,
    /// Open or resolved.
    pub phase: Phase,
}

impl IncidentFact {
    /// The title an incident opened from it carries: `db: outage` or `db, cache: major`.
    #[must_use]
    pub fn title(&self) -> String {
        let worst = self
            .roots
            .iter()
            .filter_map(|r| self.affected.get(r))
            .max()
            .copied()
            .unwrap_or(CheckStatus::Major);
        format!(
            "{}: {}",
            self.roots.join(", "),
            worst.as_str().to_lowercase()
        )
    }
}

/// A postmortem to publish for a resolved incident, as the admin API takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPostmortem {
    /// The incident.
    pub incident: i64,
    /// The postmortem.
    pub postmortem: Postmortem,
}

/// An operator's update to post, as the admin API takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUpdate {
    /// The incident.
    pub incident: i64,
    /// When (ms).
    pub at: i64,
    /// The status it gives the incident; `resolved` resolves it.
    pub status: UpdateStatus,
    /// What to say.
    pub message: String,
    /// Who says it.
    pub actor: Option<String>,
}
