//! How finely time is kept: the tiers of buckets.

use chrono::{DateTime, Duration, DurationRound, Utc};
use serde::Serialize;

/// How finely time is kept: per minute for a day, per hour for a month, per day for over a
/// year (the defaults of [`Retention`](crate::Retention)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// One bucket a minute.
    Minute,
    /// One bucket an hour.
    Hour,
    /// One bucket a day (UTC).
    Day,
}

impl Tier {
    /// Every tier, finest first.
    pub const ALL: [Tier; 3] = [Self::Minute, Self::Hour, Self::Day];

    /// The length of one bucket.
    #[must_use]
    pub fn length(self) -> Duration {
        match self {
            Self::Minute => Duration::minutes(1),
            Self::Hour => Duration::hours(1),
            Self::Day => Duration::days(1),
        }
    }

    /// The start of the bucket holding `at`.
    #[must_use]
    pub fn floor(self, at: DateTime<Utc>) -> DateTime<Utc> {
        at.duration_trunc(self.length()).unwrap_or(at)
    }

    /// The start of the first bucket at or after `at`.
    #[must_use]
    pub fn ceil(self, at: DateTime<Utc>) -> DateTime<Utc> {
        let floor = self.floor(at);
        if floor == at {
            at
        } else {
            floor + self.length()
        }
    }

    /// How it is stored: 0, 1, 2.
    #[must_use]
    pub const fn code(self) -> i64 {
        match self {
            Self::Minute => 0,
            Self::Hour => 1,
            Self::Day => 2,
        }
    }

    /// The tier stored as `code`, if any.
    #[must_use]
    pub const fn from_code(code: i64) -> Option<Tier> {
        match code {
            0 => Some(Self::Minute),
            1 => Some(Self::Hour),
            2 => Some(Self::Day),
            _ => None,
        }
    }

    /// The next coarser tier.
    #[must_use]
    pub const fn coarser(self) -> Option<Tier> {
        match self {
            Self::Minute => Some(Self::Hour),
            Self::Hour => Some(Self::Day),
            Self::Day => None,
        }
    }
}
