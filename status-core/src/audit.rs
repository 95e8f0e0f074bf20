//! The audit trail's record: one thing an operator, or code acting for one, did. The HTTP
//! layer's trail keeps these in memory, a history keeps them durably: one type, one shape.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

/// One act: who, what, on what, why, from where, and how it ended.
///
/// # Example
///
/// ```
/// use status_core::AuditRecord;
///
/// let record = AuditRecord {
///     at: chrono::Utc::now(),
///     actor: Some("alice".into()),
///     action: "PUT /admin/drain".into(),
///     target: "/admin/drain".into(),
///     reason: Some("deploy".into()),
///     address: Some("10.0.0.7".into()),
///     outcome: "200".into(),
/// };
/// assert!(!record.refused());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// When (RFC 3339 with milliseconds, UTC, in JSON).
    #[serde(serialize_with = "rfc3339_ms")]
    pub at: DateTime<Utc>,
    /// Who: the actor named, `operator` for a holder of the token who named none, or
    /// `code` for what the application did itself.
    pub actor: Option<String>,
    /// What: `PUT /admin/drain`, `hold`, …
    pub action: String,
    /// On what: a path, a hold's source.
    pub target: String,
    /// Why, when said.
    pub reason: Option<String>,
    /// From which address, when known.
    pub address: Option<String>,
    /// How it ended: the HTTP status (`200`), `taken`, `released`, …
    pub outcome: String,
}

impl AuditRecord {
    /// Whether it was refused: an HTTP status that is not a 2xx.
    #[must_use]
    pub fn refused(&self) -> bool {
        self.status().is_some_and(|s| !(200..300).contains(&s))
    }

    /// Whether it was turned away for its credentials (401, 403): such records are kept
    /// apart, so that a flood of them never pushes an operator's acts out of the trail.
    #[must_use]
    pub fn unauthenticated(&self) -> bool {
        matches!(self.status(), Some(401 | 403))
    }

    /// The HTTP status it was answered, when it was a call.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        self.outcome.parse().ok()
    }
}

impl fmt::Display for AuditRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} by {}: {}",
            self.at.to_rfc3339_opts(SecondsFormat::Millis, true),
            self.action,
            self.actor.as_deref().unwrap_or("someone"),
            self.outcome
        )
    }
}

fn rfc3339_ms<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_and_times_read_as_one_format() {
        let mut r = AuditRecord {
            at: DateTime::from_timestamp_millis(1_772_323_200_123).unwrap(),
            actor: None,
            action: "GET /admin/audit".into(),
            target: "/admin/audit".into(),
            reason: None,
            address: None,
            outcome: "401".into(),
        };
        assert!(r.refused() && r.unauthenticated());
        r.outcome = "released".into();
        assert!(!r.refused() && !r.unauthenticated());
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["at"], "2026-03-01T00:00:00.123Z");
    }
}
