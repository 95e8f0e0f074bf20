//! What is kept: series, buckets of time spent in each level, transitions, audit records,
//! mutes and overrides as they are written and read back.

use std::fmt;

use chrono::{DateTime, TimeZone, Utc};
use serde::Serialize;

pub use crate::tier::Tier;
use status_core::{CheckStatus, DependencyId};

/// A timeline kept: a dependency's reported status, the system's condition, or a group's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Series {
    /// The system's condition (the fold of every dependency by urgency).
    System,
    /// A dependency's reported status.
    Dependency(String),
    /// A probe group's condition.
    Group(String),
}

impl Series {
    /// The series of the dependency `id`.
    #[must_use]
    pub fn dependency(id: &DependencyId) -> Self {
        Self::Dependency(id.as_str().to_owned())
    }

    /// `system`, `dependency` or `group`: how it is stored.
    #[must_use]
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Dependency(_) => "dependency",
            Self::Group(_) => "group",
        }
    }

    /// The dependency's id or the group's name; empty for the system.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::System => "",
            Self::Dependency(name) | Self::Group(name) => name,
        }
    }

    /// The series stored as `kind` and `name`, if `kind` is known.
    #[must_use]
    pub fn from_parts(kind: &str, name: &str) -> Option<Self> {
        match kind {
            "system" => Some(Self::System),
            "dependency" => Some(Self::Dependency(name.to_owned())),
            "group" => Some(Self::Group(name.to_owned())),
            _ => None,
        }
    }
}

impl fmt::Display for Series {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::System => f.write_str("system"),
            Self::Dependency(id) => write!(f, "dependency {id}"),
            Self::Group(name) => write!(f, "group {name}"),
        }
    }
}

/// Milliseconds spent in each level while not muted, and muted (whatever the level).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Spent {
    /// In OK.
    pub ok: u64,
    /// In MINOR.
    pub minor: u64,
    /// In MAJOR.
    pub major: u64,
    /// In OUTAGE.
    pub outage: u64,
    /// Muted or in a maintenance window, whatever the level: counted apart.
    pub muted: u64,
}

impl Spent {
    /// Adds `ms` to `level`, or to `muted`.
    pub fn add(&mut self, level: CheckStatus, muted: bool, ms: u64) {
        let slot = if muted {
            &mut self.muted
        } else {
            match level {
                CheckStatus::Ok => &mut self.ok,
                CheckStatus::Minor => &mut self.minor,
                CheckStatus::Major => &mut self.major,
                CheckStatus::Outage => &mut self.outage,
            }
        };
        *slot += ms;
    }

    /// The sum of two.
    #[must_use]
    pub fn plus(self, other: Spent) -> Spent {
        Spent {
            ok: self.ok + other.ok,
            minor: self.minor + other.minor,
            major: self.major + other.major,
            outage: self.outage + other.outage,
            muted: self.muted + other.muted,
        }
    }

    /// Milliseconds observed and not muted.
    #[must_use]
    pub fn unmuted(self) -> u64 {
        self.ok + self.minor + self.major + self.outage
    }
}

/// What a series did in one bucket of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bucket {
    /// Where it starts.
    pub start: i64,
    /// Time in each level, in milliseconds.
    pub spent: Spent,
    /// Checks that ended in it (none for the system and groups).
    pub checks: u64,
    /// Of those, the ones that failed (OUTAGE, timed out or panicked).
    pub failures: u64,
    /// The quickest check's duration, in microseconds (0 with no check).
    pub duration_min_us: u64,
    /// The sum of the checks' durations, in microseconds.
    pub duration_sum_us: u64,
    /// The slowest check's duration, in microseconds.
    pub duration_max_us: u64,
}

impl Bucket {
    /// An empty bucket starting at `start` (Unix seconds).
    #[must_use]
    pub fn empty(start: i64) -> Self {
        Self {
            start,
            ..Self::default()
        }
    }

    /// Counts a check that took `us` microseconds.
    pub fn count_check(&mut self, failed: bool, us: u64) {
        self.duration_min_us = if self.checks == 0 {
            us
        } else {
            self.duration_min_us.min(us)
        };
        self.duration_max_us = self.duration_max_us.max(us);
        self.duration_sum_us += us;
        self.checks += 1;
        self.failures += u64::from(failed);
    }

    /// Folds `other` (a later or earlier bucket of the same series) into this one.
    pub fn merge(&mut self, other: &Bucket) {
        self.spent = self.spent.plus(other.spent);
        if other.checks > 0 {
            self.duration_min_us = if self.checks == 0 {
                other.duration_min_us
            } else {
                self.duration_min_us.min(other.duration_min_us)
            };
        }
        self.duration_max_us = self.duration_max_us.max(other.duration_max_us);
        self.duration_sum_us += other.duration_sum_us;
        self.checks += other.checks;
        self.failures += other.failures;
    }

    /// Where it starts, as a time.
    #[must_use]
    pub fn start_time(&self) -> DateTime<Utc> {
        seconds(self.start)
    }
}

/// A change of a series' level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransitionRecord {
    /// The timeline it belongs to.
    #[serde(skip)]
    pub series: Series,
    /// When it changed, in milliseconds since the Unix epoch.
    pub at: i64,
    /// The level before, `None` for the first after a start.
    pub from: Option<CheckStatus>,
    /// The level after.
    pub to: CheckStatus,
    /// The check's message (empty for the system and groups).
    pub message: String,
    /// The failing dependencies it waits on.
    pub blocked_by: Vec<String>,
}

pub use status_core::AuditRecord;

/// A maintenance an operator announced to the public: what and when, in words for
/// customers, and the dependencies it covers (muted for its window when announced).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Announcement {
    /// Its id in the store.
    pub id: i64,
    /// Its title: `Database upgrade`.
    pub title: String,
    /// What customers should know (paragraphs apart by blank lines).
    pub body: String,
    /// The dependencies it covers (ids).
    pub dependencies: Vec<String>,
    /// When it starts.
    pub start: DateTime<Utc>,
    /// When it ends.
    pub until: DateTime<Utc>,
    /// When it was announced.
    pub created: DateTime<Utc>,
    /// Who announced it.
    pub actor: Option<String>,
    /// When it was called off, if it was.
    pub cancelled: Option<DateTime<Utc>>,
}

/// How a subscriber of the status page is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubscriberKind {
    /// By mail, once the address is confirmed (double opt-in).
    Email,
    /// By a webhook, Statuspage's JSON posted to its URL.
    Webhook,
}

impl SubscriberKind {
    /// `email` or `webhook`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Email => "email",
            Self::Webhook => "webhook",
        }
    }

    /// The kind `word` names.
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "email" => Some(Self::Email),
            "webhook" => Some(Self::Webhook),
            _ => None,
        }
    }
}

/// How long the record of a message sent to a subscriber is kept (news older than a day is
/// never told, so two days suffice), and how long an address may stay unconfirmed before it
/// is let go (so that unconfirmed asks cannot fill the page's bound for good).
pub(crate) const SUBSCRIPTIONS_PRUNED_AFTER: std::time::Duration =
    std::time::Duration::from_secs(2 * 86_400);

/// Someone who asked the status page to tell them: what is told, where, in which
/// language, about which components.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Subscriber {
    /// Its id in the store.
    pub id: i64,
    /// By mail or webhook.
    pub kind: SubscriberKind,
    /// The mail address (lowercase) or the webhook's URL.
    pub address: String,
    /// The component ids they care about; empty for all.
    pub components: Vec<String>,
    /// The language mails are written in (a tag: `en`, `de`).
    pub lang: String,
    /// The hash of their secret token (which confirms and unsubscribes); the token itself is
    /// never kept.
    pub token: String,
    /// When they asked.
    pub created: DateTime<Utc>,
    /// When they confirmed (a webhook: at once); nothing is sent before.
    pub confirmed: Option<DateTime<Utc>>,
    /// When a confirmation was last sent.
    pub confirm_sent: Option<DateTime<Utc>>,
}

/// A mute as kept: restored at a start while its window has not ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MuteRecord {
    /// The dependency muted.
    pub dependency: String,
    /// Why.
    pub reason: String,
    /// Who, if said.
    pub actor: Option<String>,
    /// When it was set.
    pub set_at: DateTime<Utc>,
    /// When it starts.
    pub start: DateTime<Utc>,
    /// When it ends.
    pub until: DateTime<Utc>,
}

/// A feature override as kept: restored at a start while it has not expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideRecord {
    /// The feature.
    pub feature: String,
    /// The state it forces.
    pub enabled: bool,
    /// Why.
    pub reason: String,
    /// Who, if said.
    pub actor: Option<String>,
    /// When it was set.
    pub set_at: DateTime<Utc>,
    /// When it ends.
    pub expires_at: DateTime<Utc>,
}

/// `s` seconds since the Unix epoch as a time.
pub(crate) fn seconds(s: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(s, 0).single().unwrap_or_default()
}

/// `ms` milliseconds since the Unix epoch as a time.
pub(crate) fn millis(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}
