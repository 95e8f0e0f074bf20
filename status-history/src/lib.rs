//! Durable history for `status`: what every dependency, group and the system did over time,
//! and what operators said, kept across restarts.
//!
//! - **Time in each level**, per minute for a day, per hour for a month and per day for
//!   over a year: milliseconds in OK, MINOR, MAJOR and OUTAGE, muted time apart, checks,
//!   failures and check durations. Uptime and SLA over any window come from them
//!   ([`History::uptime`]).
//! - **Every transition** with its message and causes (`blockedBy`).
//! - **The audit trail** as a domain record: who, what, on what, why, from which address,
//!   and how it ended; holds taken from code (a drain, the culler, shutdown) included.
//! - **Mutes, maintenance windows and feature overrides**, restored at a start while in
//!   force ([`History::attach`]).
//! - **State kept for others** ([`History::put_state`]): the notifier's last-told.
//!
//! It is kept in one SQLite file (the library is built in: nothing to install). Writes go
//! through a bounded backlog, off the check and probe paths, in one transaction a second;
//! a store that fails (a full disk, a locked or unwritable file, a corrupt one) is the
//! passive dependency `history`, urgency None, which says why, while probes and checks
//! never wait, and writing resumes when the store does.
//!
//! ```no_run
//! use status_core::Registry;
//! use status_history::History;
//!
//! # #[tokio::main] async fn main() {
//! let registry = Registry::new();
//! let history = History::sqlite("status-history.db").open();
//! history.attach(&registry);
//! let restored = history.restored().await;
//! println!("{} mutes and {} overrides restored", restored.mutes, restored.overrides);
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

/// The `SET` of a bucket's upsert, in both stores' SQL: what is written is an increment,
/// added to the row kept (two runs, or two restarts of an instance, in one bucket sum).
/// `$t` is the table, `$min` and `$max` the SQL of the smaller and larger of two values.
macro_rules! add_totals {
    ($t:literal, $min:literal, $max:literal) => {
        concat!(
            "ok = ",
            $t,
            ".ok + excluded.ok, minor = ",
            $t,
            ".minor + excluded.minor, ",
            "major = ",
            $t,
            ".major + excluded.major, outage = ",
            $t,
            ".outage + excluded.outage, ",
            "muted = ",
            $t,
            ".muted + excluded.muted, checks = ",
            $t,
            ".checks + excluded.checks, ",
            "failures = ",
            $t,
            ".failures + excluded.failures, ",
            "dmin = CASE WHEN ",
            $t,
            ".checks = 0 THEN excluded.dmin WHEN excluded.checks = 0 THEN ",
            $t,
            ".dmin ELSE ",
            $min,
            "(",
            $t,
            ".dmin, excluded.dmin) END, ",
            "dsum = ",
            $t,
            ".dsum + excluded.dsum, dmax = ",
            $max,
            "(",
            $t,
            ".dmax, excluded.dmax)"
        )
    };
}

mod error;
pub mod incident;
mod model;
#[cfg(feature = "postgres")]
mod postgres;
mod run;
mod sqlite;
mod store;
mod tally;
mod uptime;
mod writes;

use std::time::Duration;

pub use self::error::StoreError;
pub use self::model::{
    AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Spent, Tier, TransitionRecord,
};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::postgres::{postgres_migrations, PostgresHistory};
pub use self::run::{
    History, HistoryBuilder, HistoryStats, QueryError, Restored, UpdateError, HISTORY_ID,
    MAX_UPDATE_MESSAGE, OPERATOR,
};
pub use self::sqlite::{migrations, Opened, SqliteHistory, SqliteStore};
pub use self::store::{HistoryStore, StoreFuture};
pub use self::tally::{Batch, Recorder};
pub use self::uptime::{DayTile, Durations, UptimeReport, Weights, Window, WindowError};
pub use self::writes::Writes;

/// How long each kind of record is kept, and how large the file may grow.
///
/// The defaults keep 1,000 dependencies for a year under 250 MB (see BENCHMARKS): minutes 25
/// hours, hours 31 days, days 400 days, transitions 90 days (each with its message: they are
/// most of the file), audit records 400 days, and a bound of 250 MB past which the oldest
/// transitions and audit records go first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// Per-minute buckets.
    pub minutes: Duration,
    /// Per-hour buckets.
    pub hours: Duration,
    /// Per-day buckets.
    pub days: Duration,
    /// Transitions.
    pub transitions: Duration,
    /// Audit records.
    pub audit: Duration,
    /// The file's size bound, in bytes.
    pub max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        const DAY: u64 = 86_400;
        Self {
            minutes: Duration::from_secs(25 * 3600),
            hours: Duration::from_secs(31 * DAY),
            days: Duration::from_secs(400 * DAY),
            transitions: Duration::from_secs(90 * DAY),
            audit: Duration::from_secs(400 * DAY),
            max_bytes: 250 * 1024 * 1024,
        }
    }
}
