//! The fleet in etcd: a lease an instance, a key a summary, a watch for the view.
//!
//! Each instance holds a lease with the fleet's TTL (in whole seconds, at least etcd's own
//! minimum, about 2 s), kept alive at every beat (a third of the TTL); its summary is written
//! under the lease only when it changes, so an instance that stops beating vanishes with its
//! lease. The view is one range read of the instances' keys, paged at one revision, then kept
//! by a watch from that revision on, with each event's previous value: the counts a data center
//! (its fresh instances by condition, and its serving ones) move by each event, and nothing
//! else is kept, so what an instance holds grows with the data centers, not the instances.
//! Per instance, steady state: one keepalive per third of the TTL and a write per change,
//! whatever the fleet's size.
//!
//! | key | value |
//! |---|---|
//! | `{prefix}mark` | [`FLEET_MARK`]: this prefix is a fleet's (written by the first instance) |
//! | `{prefix}i/{dc}\0{id}` | the instance's summary (JSON), under its lease |
//! | `{prefix}v/{dc}\0{dependency}` | the fleet's voice lease of a failure shared in a data center: `open` or `resolved`, and its holder, under an etcd lease of its own ([`FleetStore::voice`](super::FleetStore::voice)) |
//!
//! **One id, one process.** An instance is keyed by its data center and id, and its summary
//! is written only under its own lease or where no key is: a second process given the same
//! id in the same data center is refused (`id_taken`, its `fleet` dependency MAJOR) and
//! never replaces the first one's summary; it takes the id once the holder's lease ends.
//!
//! Safe whatever the store does:
//! - **unreachable, or without quorum**: every call carries a deadline and asks for a leader
//!   (`require_leader`), so a member cut off from the majority refuses rather than answers
//!   from a frozen state; the watch is cancelled with it. A beat then fails, and the fleet's
//!   view goes stale, then fails open, by [`Fleet`](super::Fleet)'s rules.
//! - **a watch that stops delivering**: a beat asks a watch with no news for a beat period
//!   for its progress; a watch not heard from for a TTL is not caught up, and the beat fails.
//! - **a watch cut**: it resumes from the last revision it applied; a revision compacted
//!   since is a full read again (a resync).
//! - **garbage under the prefix**: a key or value no instance could have written (a bad id or
//!   data center, a value over [`MAX_SUMMARY`], JSON that does not parse) is skipped and
//!   counted ([`Beat::skipped`](super::Beat::skipped)), never counted as an instance; an
//!   instance is named by its key, never by what its value says.
//! - **a prefix that holds something else entirely** (keys, but no mark): every beat fails
//!   with that reason, and [`EtcdFleet::verify`] says so at start-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, LeaseGrantOptions, LeaseKeepAliveStream, LeaseKeeper, PutOptions, Txn,
    TxnOp,
};

mod lease;
mod page;
mod store;
mod tally;
mod view;
mod voice;

/// How etcd's keys and values are read, for the fuzz targets (feature `fuzzing`, or `cargo fuzz`).
#[cfg(any(fuzzing, feature = "fuzzing"))]
pub(crate) mod fuzzing {
    pub(crate) fn entry(key: &[u8], value: &[u8]) -> Result<crate::InstanceSummary, &'static str> {
        super::tally::entry(key, value).map_err(crate::Rejection::as_str)
    }
}

use self::lease::{epoch_ms, keep_alive, lease_id};
use self::view::{watch, Claim, Inner};

use super::{
    Beat, BeatError, Boxed, DatacenterCounts, FleetStore, InstancePage, InstanceQuery,
    InstanceSummary, REJECTIONS,
};
use crate::sync::lock;
use status_checks::store::EtcdStore;
use status_core::Error;

/// What the mark key of a fleet's prefix holds.
pub const FLEET_MARK: &str = "status fleet v1";
/// The most keys one read of the view or one page of instances takes.
const READ_PAGE: i64 = 1000;

/// A fleet kept in etcd, for every instance that names the same prefix.
#[derive(Debug)]
pub struct EtcdFleet {
    inner: Arc<Inner>,
    /// Whether it keeps the view (a watch), or only publishes.
    watching: bool,
    publish: tokio::sync::Mutex<Publish>,
    watcher: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// This instance's lease and what it last wrote under it.
#[derive(Default)]
struct Publish {
    lease: Option<i64>,
    keeper: Option<(LeaseKeeper, LeaseKeepAliveStream)>,
    written: Option<String>,
    /// The key it was written under: another one (a new data center) replaces it.
    key: Option<Vec<u8>>,
    /// The lease's id, chosen by this instance at its first grant.
    id: Option<i64>,
}

impl std::fmt::Debug for Publish {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publish")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}
impl EtcdFleet {
    /// The fleet under `prefix` (`status/fleet`, a `/` added if missing) in the etcd whose
    /// members are at `urls` (`http://host:2379`, several separated by commas); an instance
    /// is stale `ttl` after its last keepalive (etcd counts a lease in whole seconds: the TTL
    /// is rounded up, and raised to etcd's minimum, about 2 s). Nothing is sent until the
    /// first beat.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `urls` are not etcd URLs, or `prefix` is empty, longer than
    /// 128 bytes, or holds a control character.
    pub fn new(urls: &str, prefix: &str, ttl: Duration) -> Result<Self, Error> {
        // Each call gets a third of the TTL: a beat is given that much in all.
        let store = EtcdStore::open(urls, (ttl / 3).max(Duration::from_millis(100)))?;
        Self::on(store, prefix, ttl)
    }

    /// The fleet under `prefix` on `store`, whose clients (and connections) it shares with
    /// every other user of a clone of it: a load generator's logical instances, several
    /// fleets of one process. Each call has the store's deadline.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `prefix` is empty, longer than 128 bytes, or holds a control
    /// character.
    pub fn on(store: EtcdStore, prefix: &str, ttl: Duration) -> Result<Self, Error> {
        let prefix = EtcdStore::prefix(prefix)?;
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                prefix,
                ttl,
                watched: Mutex::default(),
                skipped: Default::default(),
                progress: tokio::sync::Mutex::new(None),
                resyncs: AtomicU64::new(0),
                caught_up: tokio::sync::Notify::new(),
                moved: tokio::sync::watch::Sender::new(()),
                claimed: std::sync::atomic::AtomicBool::new(false),
                voice_grants: Mutex::default(),
            }),
            watching: true,
            publish: tokio::sync::Mutex::default(),
            watcher: Mutex::new(None),
        })
    }

    /// This instance only publishes (a load generator's logical instances, a sidecar): no
    /// watch, and its beats answer no data center. Not for a [`Fleet`](super::Fleet), whose
    /// view would then hold nothing.
    #[must_use]
    pub fn publish_only(mut self) -> Self {
        self.watching = false;
        self
    }

    /// The TTL.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.inner.ttl
    }

    /// The lease's TTL in seconds, as etcd is asked for it.
    fn lease_seconds(&self) -> i64 {
        i64::try_from(self.inner.ttl.as_millis().div_ceil(1000))
            .unwrap_or(i64::MAX)
            .max(1)
    }

    /// Where the store is.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} under {}",
            self.inner.store.describe(),
            String::from_utf8_lossy(&self.inner.prefix)
        )
    }

    /// How many full reads of the view this instance made (the first one included): a watch
    /// whose revision was compacted, or a store rebuilt, is read again in full.
    #[must_use]
    pub fn resyncs(&self) -> u64 {
        self.inner.resyncs.load(Ordering::Relaxed)
    }

    /// Checks at start-up that the prefix is a fleet's, or empty (then marks it as one):
    /// `Ok(true)` when it is, `Ok(false)` when etcd could not be asked (the beats will tell).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if the prefix holds keys but not a fleet's mark: something else
    /// lives there.
    pub async fn verify(&self) -> Result<bool, Error> {
        let Ok(mut client) = self.inner.store.client().await else {
            return Ok(false);
        };
        match self.inner.claim(&mut client).await {
            Ok(()) => Ok(true),
            Err(Claim::Foreign(e)) => Err(e),
            Err(Claim::Unreachable(_)) => Ok(false),
        }
    }

    /// Spawns the watch on the first beat (a runtime is there then).
    fn watch(&self) {
        let mut watcher = lock(&self.watcher);
        if watcher
            .as_ref()
            .is_none_or(tokio::task::JoinHandle::is_finished)
        {
            *watcher = Some(tokio::spawn(watch(Arc::clone(&self.inner))));
        }
    }

    /// One beat of `me`: its lease kept alive (granted again if it expired), its summary
    /// written if it changed, the watch asked for its progress, and the counts it keeps.
    async fn beat_once(&self, me: &InstanceSummary) -> Result<Beat, BeatError> {
        let json = crate::store::admit(me)?;
        if self.watching {
            self.watch();
        }
        let failed = |e: etcd_client::Error| {
            self.inner.store.failed();
            BeatError::Store(e.to_string())
        };
        let mut client = self.inner.store.client().await.map_err(failed)?;
        if !self.inner.claimed.load(Ordering::Relaxed) {
            // Nothing is written under a prefix that holds something else.
            match self.inner.claim(&mut client).await {
                Ok(()) => {}
                Err(Claim::Foreign(e)) => return Err(BeatError::Store(e.to_string())),
                Err(Claim::Unreachable(e)) => return Err(failed(e)),
            }
        }
        let mut publish = self.publish.lock().await;
        let kept = match (publish.lease, publish.keeper.as_mut()) {
            (Some(_), Some((keeper, stream))) => match keep_alive(keeper, stream).await {
                Ok(ttl) => ttl > 0,
                Err(e) => {
                    publish.keeper = None;
                    return Err(failed(e));
                }
            },
            (Some(lease), None) => match client.lease_keep_alive(lease).await {
                Ok(kept) => {
                    publish.keeper = Some(kept);
                    true
                }
                Err(etcd_client::Error::LeaseKeepAliveError(_)) => false,
                Err(e) => return Err(failed(e)),
            },
            (None, _) => false,
        };
        if !kept {
            // No lease yet, or it expired: the key went with it. The lease's id is this
            // instance's own, so a grant whose answer was lost is found again ("already
            // exists"), never granted twice and left to expire unused.
            publish.keeper = None;
            publish.written = None;
            publish.lease = None;
            let id = *publish.id.get_or_insert_with(lease_id);
            match client
                .lease_grant(
                    self.lease_seconds(),
                    Some(LeaseGrantOptions::new().with_id(id)),
                )
                .await
            {
                Ok(_) => {}
                Err(etcd_client::Error::GRpcStatus(status))
                    if status.message().contains("lease already exists") => {}
                Err(e) => return Err(failed(e)),
            }
            publish.lease = Some(id);
        }
        let lease = publish.lease.unwrap_or_default();
        let key = self.inner.instance_key(&me.datacenter, &me.instance_id);
        if publish.written.as_deref() != Some(json.as_str()) || publish.key.as_ref() != Some(&key) {
            let mut writes = vec![TxnOp::put(
                key.clone(),
                json.as_bytes(),
                Some(PutOptions::new().with_lease(lease)),
            )];
            if let Some(old) = publish.key.as_ref().filter(|old| **old != key) {
                // Moved to another data center: the old key would live on with the lease.
                writes.push(TxnOp::delete(old.clone(), None));
            }
            // One id, one process: the key is written if it is under this lease already, or
            // absent; never over another process's (another lease's) summary.
            let unheld = Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then(writes.clone());
            let answer = client
                .txn(
                    Txn::new()
                        .when([Compare::lease(key.clone(), CompareOp::Equal, lease)])
                        .and_then(writes)
                        .or_else([TxnOp::txn(unheld)]),
                )
                .await
                .map_err(failed)?;
            let written = answer.succeeded()
                || answer.op_responses().iter().any(
                    |r| matches!(r, etcd_client::TxnOpResponse::Txn(inner) if inner.succeeded()),
                );
            if !written {
                return Err(BeatError::IdTaken {
                    datacenter: me.datacenter.clone(),
                });
            }
            publish.written = Some(json);
            publish.key = Some(key);
        }
        drop(publish);
        if !self.watching {
            return Ok(Beat::kept(epoch_ms(), Vec::new(), [0; REJECTIONS.len()]));
        }
        let quiet = self
            .inner
            .lock()
            .heard
            .is_none_or(|at| at.elapsed() >= self.inner.ttl / 3);
        if quiet {
            // A watch with no news for a beat period is asked for its progress (a busy fleet's
            // events say it lives); best effort: a watch that cannot be asked is one not
            // heard from, and the beat a TTL later fails.
            if let Some(sender) = self.inner.progress.lock().await.as_mut() {
                let _ = sender.request_progress().await;
            }
        }
        if !self.inner.lock().synced {
            // A watch just started (or restarted) is given a moment to catch up.
            let _ = tokio::time::timeout(self.inner.ttl / 6, self.inner.caught_up.notified()).await;
        }
        let datacenters = self.inner.vouched().map_err(BeatError::Store)?;
        let skipped = std::array::from_fn(|i| self.inner.skipped[i].swap(0, Ordering::Relaxed));
        Ok(Beat::kept(epoch_ms(), datacenters, skipped))
    }

    async fn forget_keeper(&self) {
        // A keepalive stream that may hold a late answer is never read again, and a member
        // that did not answer in time is left for the next.
        self.publish.lock().await.keeper = None;
        self.inner.store.failed();
    }
}

impl Drop for EtcdFleet {
    fn drop(&mut self) {
        if let Some(watcher) = lock(&self.watcher).take() {
            watcher.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_checked() {
        for bad in ["", "a\nb", &"x".repeat(129)] {
            assert!(
                EtcdFleet::new("http://127.0.0.1:2379", bad, Duration::from_secs(3))
                    .unwrap_err()
                    .is_invalid()
            );
        }
        let fleet = EtcdFleet::new(
            "http://127.0.0.1:2379",
            "status/fleet",
            Duration::from_millis(2500),
        )
        .unwrap();
        assert_eq!(
            fleet.describe(),
            "http://127.0.0.1:2379 under status/fleet/"
        );
        assert_eq!(fleet.lease_seconds(), 3);
    }
}
