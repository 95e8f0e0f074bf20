//! The contract of a history store: SQLite in a file ([`SqliteHistory`](crate::SqliteHistory)),
//! or PostgreSQL for a fleet (`PostgresHistory`, feature `postgres`). The driver writes
//! through it, the routes read through it; neither knows which store it is. Every time in it
//! is a `DateTime<Utc>` (kept to the millisecond); raw integers are the SQL's alone.

use std::future::Future;
use std::pin::Pin;

use chrono::{DateTime, Utc};

use crate::exclusion::Exclusion;
use crate::incident::{Incident, IncidentUpdate, NewPostmortem, NewUpdate, Postmortem};
use crate::model::{
    Announcement, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Subscriber,
    SubscriberKind, Tier, TransitionRecord,
};
use crate::Writes;
use crate::{Error, Retention};

/// What a store's calls answer: a boxed future, so that stores can be chosen at run time.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

/// A place history is kept. Every call may fail (the store is down, full, locked); none may
/// hang past a few seconds (a store bounds its own calls). Reads that span a fleet (one
/// database, many instances) merge what every instance wrote: time in each level summed,
/// so that a dependency's uptime is the fleet's.
pub trait HistoryStore: Send + Sync + std::fmt::Debug + 'static {
    /// `sqlite` or `postgres`: what logs and the `history` dependency name it.
    fn kind(&self) -> &'static str;

    /// Opens or connects, migrating the schema, and starts a run at `now`: called by the
    /// driver at start and, while it fails, every ten seconds (every second while another
    /// process holds it).
    fn open(&self, now: DateTime<Utc>) -> StoreFuture<'_, ()>;

    /// Whether it is open now (the last call did not find it gone).
    fn is_open(&self) -> bool;

    /// Closes it: its connection and its lock are let go (another process may then open
    /// it). Called by the driver once nothing more will be written.
    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    /// Something the `history` dependency should say while nothing else is wrong (a corrupt
    /// file moved aside), if any.
    fn note(&self) -> Option<String> {
        None
    }

    /// Commits `writes` in one transaction: all of it, or nothing.
    fn write<'a>(&'a self, writes: &'a Writes) -> StoreFuture<'a, ()>;

    /// The buckets of `series` in `tier` starting from `from` to `to` (`to` excluded),
    /// oldest first.
    fn buckets<'a>(
        &'a self,
        series: &'a Series,
        tier: Tier,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<Bucket>>;

    /// The day buckets of every series of `kind` from `from` to `to`, by series, oldest
    /// first: the tiles of a whole page in one read.
    fn days_of<'a>(
        &'a self,
        kind: &'a str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<(Series, Vec<Bucket>)>>;

    /// The latest `limit` transitions of `series` from `from` to `to` (`to` excluded),
    /// oldest first.
    fn transitions<'a>(
        &'a self,
        series: &'a Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TransitionRecord>>;

    /// The latest `limit` audit records before the record `before`, newest first, with
    /// their ids.
    fn audit(&self, before: Option<i64>, limit: usize) -> StoreFuture<'_, Vec<(i64, AuditRecord)>>;

    /// This instance's mutes kept.
    fn mutes(&self) -> StoreFuture<'_, Vec<MuteRecord>>;

    /// The mutes the other instances sharing this store keep (a fleet on one database): an
    /// instance takes the newest of each dependency's, so that an act on one holds on all.
    /// None by default: a store one process holds has no peers.
    fn peer_mutes(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// The mutes any instance ended before their window's end
    /// ([`Writes::mute_ends`](crate::Writes::mute_ends)) whose window has not ended yet:
    /// each instance ends its copy. None by default.
    fn mute_ends(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        Box::pin(async { Ok(Vec::new()) })
    }

    /// This instance's overrides kept.
    fn overrides(&self) -> StoreFuture<'_, Vec<OverrideRecord>>;

    /// This instance's state under `key`.
    fn state<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<String>>;

    /// Every series kept of `kind`.
    fn series<'a>(&'a self, kind: &'a str) -> StoreFuture<'a, Vec<Series>>;

    /// The incidents open, and those resolved at or after `since`, the latest started
    /// first, at most `limit`, each with its updates.
    fn incidents(&self, since: DateTime<Utc>, limit: usize) -> StoreFuture<'_, Vec<Incident>>;

    /// The incident `id`, if kept.
    fn incident(&self, id: i64) -> StoreFuture<'_, Option<Incident>>;

    /// Posts an operator's update (`resolved` resolves the incident); answers it, or `None`
    /// when there is no such incident, and then writes nothing.
    fn post_update<'a>(&'a self, update: &'a NewUpdate) -> StoreFuture<'a, Option<IncidentUpdate>>;

    /// Publishes a postmortem, replacing its incident's earlier one; answers it, or `None`
    /// when there is no such incident, and then writes nothing.
    fn set_postmortem<'a>(
        &'a self,
        postmortem: &'a NewPostmortem,
    ) -> StoreFuture<'a, Option<Postmortem>>;

    /// Keeps a maintenance announced to the public (its `id` is the store's, its
    /// `cancelled` none); answers it as kept.
    fn announce<'a>(&'a self, announcement: &'a Announcement) -> StoreFuture<'a, Announcement>;

    /// The announcements ending at or after `since`, called off or not, the soonest first,
    /// at most 200.
    fn announcements(&self, since: DateTime<Utc>) -> StoreFuture<'_, Vec<Announcement>>;

    /// Calls off announcement `id` at `at` (a second call keeps the first time); answers it,
    /// or `None` when there is no such announcement.
    fn cancel_announcement(
        &self,
        id: i64,
        at: DateTime<Utc>,
    ) -> StoreFuture<'_, Option<Announcement>>;

    /// Keeps an exclusion (its `id` is the store's); answers it as kept.
    fn exclude<'a>(&'a self, exclusion: &'a Exclusion) -> StoreFuture<'a, Exclusion>;

    /// Every exclusion kept, the oldest window first (at most 1,000).
    fn exclusions(&self) -> StoreFuture<'_, Vec<Exclusion>>;

    /// Removes exclusion `id`; answers it, or `None` when there is none.
    fn remove_exclusion(&self, id: i64) -> StoreFuture<'_, Option<Exclusion>>;

    /// The status page's subscriber of `kind` at `address`, if any.
    fn subscriber<'a>(
        &'a self,
        kind: SubscriberKind,
        address: &'a str,
    ) -> StoreFuture<'a, Option<Subscriber>>;

    /// Keeps a subscriber (its `id` the store's), or for one of that kind and address kept
    /// already, its components, language, token and last confirmation; answers it as kept.
    fn subscribe<'a>(&'a self, subscriber: &'a Subscriber) -> StoreFuture<'a, Subscriber>;

    /// Confirms the subscriber whose token hashes to `token`, at `at` (a second time keeps
    /// the first); `None` when there is none.
    fn confirm_subscriber<'a>(
        &'a self,
        token: &'a str,
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, Option<Subscriber>>;

    /// Removes the subscriber whose token hashes to `token`, and what it was sent; `None`
    /// when there is none.
    fn unsubscribe<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Subscriber>>;

    /// Removes the subscriber `id` (an operator's act), and what it was sent; `None` when
    /// there is none.
    fn remove_subscriber(&self, id: i64) -> StoreFuture<'_, Option<Subscriber>>;

    /// Every subscriber, confirmed or not, by id (at most 100,000).
    fn subscribers(&self) -> StoreFuture<'_, Vec<Subscriber>>;

    /// Claims the sending of `event` to `subscriber`: `true` for the first instance to claim
    /// it (it sends), `false` when claimed already, so that a fleet sends each message once.
    fn claim_delivery<'a>(
        &'a self,
        event: &'a str,
        subscriber: i64,
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, bool>;

    /// Claims the sending of `event` to each of `subscribers` at once: answers those this
    /// instance claimed (it sends to them); the others were claimed already.
    fn claim_deliveries<'a>(
        &'a self,
        event: &'a str,
        subscribers: &'a [i64],
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<i64>>;

    /// Lets a claim go (its sending failed): it is tried again.
    fn release_delivery<'a>(&'a self, event: &'a str, subscriber: i64) -> StoreFuture<'a, ()>;

    /// Deletes what `retention` no longer keeps at `now`; answers the rows deleted.
    fn prune<'a>(&'a self, now: DateTime<Utc>, retention: &'a Retention) -> StoreFuture<'a, u64>;
}
