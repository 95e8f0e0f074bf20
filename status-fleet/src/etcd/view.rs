//! The view of an etcd fleet: the counts a data center, read once and kept by a watch, and
//! what no instance could have written, skipped and counted.

use crate::Rejection;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, EventType, GetOptions, KeyValue, Txn, TxnOp, WatchOptions,
    WatchRequestSender,
};
use tokio::time::Instant;

use super::tally::{counted, tally, Counts};
use super::{FLEET_MARK, READ_PAGE};
use crate::sync::lock;
use crate::{DatacenterCounts, REJECTIONS};
use status_checks::store::{prefix_end, EtcdStore};
use status_core::Error;

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) store: EtcdStore,
    /// The prefix, ending with `/`.
    pub(super) prefix: Vec<u8>,
    pub(super) ttl: Duration,
    pub(super) watched: Mutex<Watched>,
    /// Keys skipped since the last beat, by reason ([`REJECTIONS`]).
    pub(super) skipped: [AtomicU64; REJECTIONS.len()],
    /// The watch's request side, to ask it for progress.
    pub(super) progress: tokio::sync::Mutex<Option<WatchRequestSender>>,
    /// Full reads of the view since the start (the first one included).
    pub(super) resyncs: AtomicU64,
    /// Told when the watch is caught up.
    pub(super) caught_up: tokio::sync::Notify,
    /// Told when the counts moved.
    pub(super) moved: tokio::sync::watch::Sender<()>,
    /// Whether the prefix was found a fleet's: nothing is written under it before.
    pub(super) claimed: std::sync::atomic::AtomicBool,
    /// The granted TTL of the etcd leases other holders' voice keys were found under.
    pub(super) voice_grants: Mutex<std::collections::HashMap<i64, i64>>,
}

/// The view as the watch keeps it.
#[derive(Debug, Default)]
pub(super) struct Watched {
    /// Each data center's fresh instances by condition, and its serving ones.
    pub(super) counts: Counts,
    /// Whether the counts are those of `revision`, and the watch runs from it.
    pub(super) synced: bool,
    /// The last revision applied.
    pub(super) revision: i64,
    /// When the watch last answered (an event, its creation, a progress report).
    pub(super) heard: Option<Instant>,
    /// The cluster the counts were read from: another one (a store rebuilt) is a resync.
    pub(super) cluster: u64,
    /// The prefix holds something else: why.
    pub(super) foreign: Option<String>,
}

/// Why a prefix could not be claimed.
pub(super) enum Claim {
    /// Something else lives there.
    Foreign(Error),
    /// etcd did not answer.
    Unreachable(etcd_client::Error),
}

impl Inner {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Watched> {
        lock(&self.watched)
    }

    pub(super) fn instances_key(&self) -> Vec<u8> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(b"i/");
        key
    }

    pub(super) fn instance_key(&self, datacenter: &str, id: &str) -> Vec<u8> {
        let mut key = self.instances_key();
        key.extend_from_slice(datacenter.as_bytes());
        key.push(0);
        key.extend_from_slice(id.as_bytes());
        key
    }

    /// The counts, if the watch vouches for them: caught up, heard from within a TTL, on a
    /// prefix that is a fleet's; else why not.
    pub(super) fn vouched(&self) -> Result<Vec<DatacenterCounts>, String> {
        let now = Instant::now();
        let watched = self.lock();
        if let Some(why) = &watched.foreign {
            return Err(why.clone());
        }
        let heard = watched
            .heard
            .is_some_and(|at| now.duration_since(at) <= self.ttl);
        if !watched.synced || !heard {
            return Err("the watch on the fleet is not caught up".to_owned());
        }
        Ok(counted(&watched.counts))
    }

    pub(super) fn mark_key(&self) -> Vec<u8> {
        let mut key = self.prefix.clone();
        key.extend_from_slice(b"mark");
        key
    }

    pub(super) fn skip(&self, reason: Rejection) {
        self.skipped[reason.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The prefix is a fleet's: marked, or empty and now marked.
    pub(super) async fn claim(&self, client: &mut Client) -> Result<(), Claim> {
        let failed = Claim::Unreachable;
        let mark = self.mark_key();
        let found = client.get(mark.clone(), None).await.map_err(failed)?;
        if let Some(kv) = found.kvs().first() {
            if kv.value() == FLEET_MARK.as_bytes() {
                self.claimed.store(true, Ordering::Relaxed);
                return Ok(());
            }
            return Err(Claim::Foreign(self.foreign("its mark is not a fleet's")));
        }
        // Instances' keys are a fleet's; anything else, before them or after them, is not.
        let instances = self.instances_key();
        let mut others = 0;
        for (from, to) in [
            (self.prefix.clone(), instances.clone()),
            (prefix_end(&instances), prefix_end(&self.prefix)),
        ] {
            let held = client
                .get(
                    from,
                    Some(GetOptions::new().with_range(to).with_count_only()),
                )
                .await
                .map_err(failed)?;
            others += held.count();
        }
        if others > 0 {
            // Another instance may have marked the prefix between the two reads (its mark is
            // among the keys counted): the mark decides, read again.
            let again = client.get(mark.clone(), None).await.map_err(failed)?;
            if again
                .kvs()
                .first()
                .is_some_and(|kv| kv.value() == FLEET_MARK.as_bytes())
            {
                self.claimed.store(true, Ordering::Relaxed);
                return Ok(());
            }
            return Err(Claim::Foreign(
                self.foreign(&format!("{others} keys, and no fleet's mark")),
            ));
        }
        // Marked by whichever instance comes first.
        client
            .txn(
                Txn::new()
                    .when([Compare::version(mark.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(mark, FLEET_MARK, None)]),
            )
            .await
            .map_err(failed)?;
        self.claimed.store(true, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn foreign(&self, what: &str) -> Error {
        Error::invalid(format!(
            "the etcd prefix {} holds something else ({what}): choose another prefix",
            String::from_utf8_lossy(&self.prefix)
        ))
    }

    /// A full read of the instances at one revision, paged: the counts of that revision.
    pub(super) async fn read(&self, client: &mut Client) -> Result<(), etcd_client::Error> {
        let base = self.instances_key();
        let end = prefix_end(&base);
        let mut counts = BTreeMap::new();
        let mut from = base.clone();
        let mut revision = 0;
        let mut cluster = 0;
        loop {
            let mut options = GetOptions::new()
                .with_range(end.clone())
                .with_limit(READ_PAGE);
            if revision > 0 {
                options = options.with_revision(revision);
            }
            let page = client.get(from.clone(), Some(options)).await?;
            if let Some(header) = page.header() {
                if revision == 0 {
                    revision = header.revision();
                    cluster = header.cluster_id();
                }
            }
            for kv in page.kvs() {
                self.count(&mut counts, kv, 1);
            }
            match page.kvs().last() {
                Some(last) if page.more() => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => break,
            }
        }
        self.resyncs.fetch_add(1, Ordering::Relaxed);
        let mut watched = self.lock();
        watched.counts = counts;
        watched.revision = revision;
        watched.cluster = cluster;
        watched.synced = true;
        watched.heard = Some(Instant::now());
        drop(watched);
        self.caught_up.notify_waiters();
        self.moved.send_replace(());
        Ok(())
    }

    /// Moves the counts by one key-value's instance (`by` +1 or -1); a key or value no
    /// instance could have written is skipped (and counted when it arrives, not when it
    /// goes). Answers false when the counts would go below zero: they are not this store's.
    pub(super) fn count(&self, counts: &mut Counts, kv: &KeyValue, by: i8) -> bool {
        let base = self.prefix.len() + 2;
        let mut bad = false;
        match tally(
            counts,
            &kv.key()[base.min(kv.key().len())..],
            kv.value(),
            by,
            &mut bad,
        ) {
            Ok(consistent) => {
                if bad && by > 0 {
                    self.skip(Rejection::BadFailing);
                }
                consistent
            }
            Err(reason) => {
                self.skip(reason);
                true
            }
        }
    }
}

/// Keeps the view: a full read, then a watch from its revision; a watch cut resumes from the
/// last revision applied, one whose revision was compacted (or a store rebuilt) reads again.
pub(super) async fn watch(inner: Arc<Inner>) {
    let mut pause = Duration::from_millis(100);
    let mut needs_read = true;
    loop {
        // Cut for longer than a TTL: read again in full. A resumed watch's first answer (its
        // creation) comes before the events it replays, and so does a progress report on
        // etcd before 3.4.24 and 3.5.8: neither says the counts caught up, and counts a TTL
        // behind would be served as fresh until the replay arrives (found by
        // scripts/partition: a view fresh after a partition healed, counting an instance
        // gone for five seconds). A shorter cut resumes: its counts lag less than a TTL.
        if inner.lock().heard.is_none_or(|at| at.elapsed() > inner.ttl) {
            needs_read = true;
        }
        match watch_once(&inner, &mut needs_read).await {
            Ok(()) => pause = Duration::from_millis(100),
            Err(e) => {
                inner.store.failed();
                tracing::warn!("the watch on the fleet's etcd failed: {e}");
                pause = (pause * 2).min(inner.ttl / 3);
            }
        }
        inner.lock().synced = false;
        *inner.progress.lock().await = None;
        tokio::time::sleep(pause).await;
    }
}

/// One watch, until it is cut or cancelled.
async fn watch_once(inner: &Inner, needs_read: &mut bool) -> Result<(), String> {
    let mut client = inner.store.client().await.map_err(|e| e.to_string())?;
    if inner.lock().foreign.is_some() || *needs_read {
        match inner.claim(&mut client).await {
            Ok(()) => {}
            Err(Claim::Foreign(e)) => {
                let why = e.to_string();
                tracing::error!("{why}");
                inner.lock().foreign = Some(why.clone());
                return Err(why);
            }
            Err(Claim::Unreachable(e)) => return Err(e.to_string()),
        }
        inner.lock().foreign = None;
        inner.read(&mut client).await.map_err(|e| e.to_string())?;
        *needs_read = false;
    }
    let (revision, cluster) = {
        let watched = inner.lock();
        (watched.revision, watched.cluster)
    };
    let options = WatchOptions::new()
        .with_prefix()
        .with_prev_key()
        .with_progress_notify()
        .with_start_revision(revision + 1);
    let stream = client
        .watch(inner.instances_key(), Some(options))
        .await
        .map_err(|e| e.to_string())?;
    let (sender, mut answers) = stream.split();
    *inner.progress.lock().await = Some(sender);
    loop {
        let Some(answer) = answers.message().await.map_err(|e| e.to_string())? else {
            return Err("the watch ended".to_owned());
        };
        if let Some(header) = answer.header() {
            if cluster != 0 && header.cluster_id() != cluster {
                *needs_read = true;
                return Err("the fleet's etcd is another cluster now: read again".to_owned());
            }
        }
        if answer.canceled() {
            if answer.compact_revision() > 0 {
                *needs_read = true;
                return Err(format!(
                    "the watch's revision {} was compacted (now {}): read again",
                    revision + 1,
                    answer.compact_revision()
                ));
            }
            return Err(format!(
                "the watch was cancelled: {}",
                answer.cancel_reason()
            ));
        }
        let mut watched = inner.lock();
        let mut counts = std::mem::take(&mut watched.counts);
        let mut consistent = true;
        for event in answer.events() {
            let Some(kv) = event.kv() else { continue };
            if let Some(previous) = event.prev_kv() {
                consistent &= inner.count(&mut counts, previous, -1);
            } else if kv.version() != 1 {
                // A change whose previous value was not sent: the counts cannot follow it.
                consistent = false;
            }
            if event.event_type() == EventType::Put {
                consistent &= inner.count(&mut counts, kv, 1);
            }
            watched.revision = watched.revision.max(kv.mod_revision());
        }
        watched.counts = counts;
        // The revision moves with the events applied only: a creation's answer carries the
        // store's revision, ahead of the events still to come, and so does a progress report
        // on etcd before 3.4.24 and 3.5.8 (it was not ordered with the events). A watch cut
        // after either would resume past events it never saw.
        if !consistent {
            watched.synced = false;
            drop(watched);
            *needs_read = true;
            return Err("the watch's events do not follow the counts: read again".to_owned());
        }
        watched.heard = Some(Instant::now());
        let caught_up = !watched.synced;
        watched.synced = true;
        drop(watched);
        if caught_up {
            inner.caught_up.notify_waiters();
        }
        if !answer.events().is_empty() {
            inner.moved.send_replace(());
        }
    }
}
