//! Durable history for `status`: what every dependency, group and the system did over time,
//! and what operators said, kept across restarts, exactly.
//!
//! - **Time in each level**, per minute for a day, per hour for a month and per day for
//!   over a year: milliseconds in OK, MINOR, MAJOR and OUTAGE, muted time apart, checks,
//!   failures and check durations. Uptime and SLA over any window come from them
//!   ([`History::uptime`]). What a run spent in a bucket is *added* to what the store holds
//!   for it: two runs in one minute (a deploy, a crash loop) sum, and every figure equals a
//!   replay of the durable transitions bounded by each run's last write (property-tested on
//!   both stores, and on the real quickstart killed and restarted).
//! - **Every transition** with its message and causes (`blockedBy`), as data
//!   ([`History::transitions_between`]).
//! - **The audit trail** as one record ([`AuditRecord`], status-core's): who, what, on
//!   what, why, from which address, and how it ended; holds taken from code (a drain, the
//!   culler, shutdown) included, and a release named for who released it.
//! - **Mutes, maintenance windows and feature overrides**, restored at a start while in
//!   force, with their own times ([`History::attach`]).
//! - **Incidents** opened and resolved by root cause ([`incident`]), shared by a fleet in
//!   PostgreSQL.
//! - **State kept for others** ([`History::put_state`]): the notifier's last-told
//!   (status-notify's feature `history` wires it in one call).
//!
//! Reads include what the running process has recorded and not yet written: they never
//! lag the probes.
//!
//! It is kept in one SQLite file (the library is built in: nothing to install), or in
//! PostgreSQL for a fleet (feature `postgres`). Writes go through a bounded backlog, off the
//! check and probe paths, in one transaction a second. One process keeps a file (a lock
//! beside it, naming its holder; with PostgreSQL, an instance id), and only a file of its
//! own: another application's database, or a newer version's, is left untouched. A store
//! that fails (a full disk, a file held by another process, a corrupt one) is the passive
//! dependency `history`, urgency None, which says why, while probes and checks never wait,
//! and writing resumes when the store does. [`History::close`] at shutdown writes the last
//! second and lets the store go.
//!
//! # The rooms
//!
//! | module | what |
//! |---|---|
//! | `tally` | the pure `Recorder`: events in, increments per minute out |
//! | `uptime`, `model` | the uptime fold over buckets; series, tiers, buckets, records |
//! | [`objective`] | service level objectives: bad time, budgets, burn rates and the workbook's alerts, pure; [`History::slo`] reads them |
//! | [`exclusion`] | past windows marked as planned maintenance: their time moved to muted time in every tier, pure |
//! | [`sla`] | SLA reports' rows, and their RFC 4180 CSV ([`History::sla_report`] reads them) |
//! | [`incident`] | the pure `IncidentTracker` (told the registry's facts), `merge` of a fleet's facts into one incident, update kinds |
//! | `store`, `sqlite`, `postgres` | the one [`HistoryStore`] trait and its two stores, with their migrations |
//! | `run` | [`History`]: the driver (events in, a write a second), the live reads, restore at a start; incidents' updates and postmortems, announced maintenances, the status page's subscribers and their deliveries |
//! | `writes`, `error` | a write's batch; [`Error`] with its kinds |
//!
//! # Features
//!
//! | feature | what |
//! |---|---|
//! | `postgres` | `PostgresHistory`: the history in PostgreSQL, shared by a fleet (tokio-postgres) |
//!
//! ```no_run
//! use status_core::Registry;
//! use status_history::History;
//!
//! # #[tokio::main] async fn main() {
//! let registry = Registry::new();
//! let history = History::sqlite("status-history.db").open();
//! history.attach(&registry);
//! // Mutes and overrides come back by themselves once the store opens: say what came back
//! // without waiting for it (a store that does not open never keeps the port closed).
//! let restoring = history.clone();
//! tokio::spawn(async move {
//!     let restored = restoring.restored().await;
//!     println!("{} mutes and {} overrides restored", restored.mutes, restored.overrides);
//! });
//! // … bind and serve; then, at shutdown:
//! history.close().await;
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
pub mod exclusion;
pub mod incident;
mod model;
pub mod objective;
#[cfg(feature = "postgres")]
mod postgres;
mod run;
pub mod sla;
mod sqlite;
mod store;
mod sync;
mod tally;
mod tier;
mod uptime;
mod writes;

use std::time::Duration;

pub use self::error::Error;
pub use self::model::{
    Announcement, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Spent, Subscriber,
    SubscriberKind, Tier, TransitionRecord,
};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use self::postgres::{postgres_migrations, PostgresHistory};
pub use self::run::{
    History, HistoryBuilder, HistoryStats, NewAnnouncement, NewExclusion, Restored, ALARMS_KEY,
    HISTORY_ID, MAX_ANNOUNCED_DEPENDENCIES, MAX_ANNOUNCEMENT_BODY, MAX_ANNOUNCEMENT_TITLE,
    MAX_POSTMORTEM, MAX_UPDATE_MESSAGE, OPERATOR, SLO_EVERY,
};
pub use self::sqlite::{migrations, Opened, SqliteHistory, SqliteStore};
pub use self::store::{HistoryStore, StoreFuture};
pub use self::tally::{Batch, Recorder};
pub use self::uptime::{span, DayTile, Durations, UptimeReport, Weights, Window, MAX_SPAN_DAYS};
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
