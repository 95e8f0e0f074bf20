//! Draining: taking the instance out of rotation on purpose.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use tokio::time::Instant;

use crate::result::iso;

/// The instance is draining: readiness and summary fail so balancers stop sending traffic,
/// while liveness still passes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DrainState {
    /// Why.
    pub reason: String,
    /// Who, if said.
    pub actor: Option<String>,
    /// Since when.
    pub since: DateTime<Utc>,
    /// Until when; `None` until undrained (as during shutdown).
    pub until: Option<DateTime<Utc>>,
    pub(crate) deadline: Option<Instant>,
}

impl DrainState {
    pub(crate) fn is_over(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// What is left of it at `now`, if it has an end.
    #[must_use]
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(now))
    }
}

impl Serialize for DrainState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("DrainState", 5)?;
        s.serialize_field("draining", &true)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("actor", &self.actor)?;
        s.serialize_field("since", &iso(self.since))?;
        s.serialize_field("until", &self.until.map(iso))?;
        s.end()
    }
}
