//! Rotation: whether the instance should receive traffic. "Out of rotation" is a set of holds,
//! one per source, so that an operator, a shutdown and a culler can each take the instance
//! out without undoing each other.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use tokio::time::Instant;

use crate::text::iso;

/// Who holds the instance out of rotation. Each source has at most one hold; clearing it
/// clears that source's hold only.
///
/// `Ord` goes from the most final source to the least: a shutdown outranks a cull, which
/// outranks an operator's drain; the first hold is the one a summary names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HoldSource {
    /// A graceful shutdown: the process is stopping. No admin call clears it.
    Shutdown,
    /// The culler: this instance judged itself broken and took a token from the fleet's
    /// budget to leave.
    Cull,
    /// An operator, through the admin API's drain.
    Operator,
}

impl HoldSource {
    /// Every source, most final first.
    pub const ALL: [HoldSource; 3] = [Self::Shutdown, Self::Cull, Self::Operator];

    /// `shutdown`, `cull` or `operator`: the name in JSON and metric labels.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Shutdown => "shutdown",
            Self::Cull => "cull",
            Self::Operator => "operator",
        }
    }
}

impl fmt::Display for HoldSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for HoldSource {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One source's hold on the instance: why, who, since when, until when.
///
/// Serialized as `{"source", "reason", "since", "until", "actor"}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RotationHold {
    /// Who holds it.
    pub source: HoldSource,
    /// Why.
    pub reason: String,
    /// Who set it, if said.
    pub actor: Option<String>,
    /// Since when.
    pub since: DateTime<Utc>,
    /// Until when; `None` until released.
    pub until: Option<DateTime<Utc>>,
    pub(crate) deadline: Option<Instant>,
}

impl RotationHold {
    pub(crate) fn is_over(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// What is left of it at `now`, if it has an end.
    #[must_use]
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(now))
    }
}

impl Serialize for RotationHold {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("RotationHold", 5)?;
        s.serialize_field("source", &self.source)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("since", &iso(self.since))?;
        s.serialize_field("until", &self.until.map(iso))?;
        s.serialize_field("actor", &self.actor)?;
        s.end()
    }
}

/// The instance is out of rotation: readiness and summary fail so balancers stop sending
/// traffic, while liveness still passes.
///
/// Its `reason`, `actor`, `since` and `until` are those of one hold (the one asked about, or
/// the most final one); `holds` lists every hold in force.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DrainState {
    /// Why.
    pub reason: String,
    /// Who, if said.
    pub actor: Option<String>,
    /// Since when.
    pub since: DateTime<Utc>,
    /// Until when; `None` until released (as during shutdown).
    pub until: Option<DateTime<Utc>>,
    /// Every hold in force, most final first.
    pub holds: Vec<RotationHold>,
    pub(crate) deadline: Option<Instant>,
}

impl DrainState {
    /// The state of `holds`, described by `main` (which should be one of them); `None` when
    /// there is no hold.
    pub(crate) fn of(main: Option<&RotationHold>, holds: Vec<RotationHold>) -> Option<Self> {
        let main = main.or_else(|| holds.first())?.clone();
        Some(Self {
            reason: main.reason,
            actor: main.actor,
            since: main.since,
            until: main.until,
            deadline: main.deadline,
            holds,
        })
    }

    /// What is left of it at `now`, if it has an end.
    #[must_use]
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(now))
    }

    /// Every hold's reason, most final first, joined by `; `.
    #[must_use]
    pub fn reasons(&self) -> String {
        let reasons: Vec<&str> = self.holds.iter().map(|h| h.reason.as_str()).collect();
        reasons.join("; ")
    }
}

impl Serialize for DrainState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("DrainState", 6)?;
        s.serialize_field("draining", &true)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("actor", &self.actor)?;
        s.serialize_field("since", &iso(self.since))?;
        s.serialize_field("until", &self.until.map(iso))?;
        s.serialize_field("holds", &self.holds)?;
        s.end()
    }
}
