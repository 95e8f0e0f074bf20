//! Budgets kept in etcd, shared by a fleet: a grant is a slot key taken by one linearizable
//! transaction (compare: the slot is free; then: put it under a lease that ends with the
//! window), so a budget never grants past its capacity, even across a leader change.
//!
//! | key | what |
//! |---|---|
//! | `{key}/sliding/{slot}` | a grant of the last window: its lease lasts the window |
//! | `{key}/fixed/{window}/{slot}` | a grant of calendar window `window`: its lease ends with it |
//!
//! Slots are numbered below the capacity: at most `capacity` keys can live at once, and a
//! slot taken at `t` is free again no sooner than `t + window` (etcd counts a lease from its
//! grant, in whole seconds rounded up, and a new leader extends every lease: both err towards
//! fewer grants).
//!
//! Safe whatever the store does:
//! - **unreachable, slow, or without quorum**: every call asks for a leader and has the ask's
//!   deadline; an ask not answered in time is a refusal. A grant whose answer was lost stays
//!   taken: spent, never free.
//! - **a leader change**: a transaction is committed by a majority or not at all; a grant is
//!   never made twice.
//! - **garbage**: a key under the budget that is no slot is ignored; a slot key without a
//!   lease (written by hand, it would never expire) is deleted and logged.
//! - **clocks**: the sliding window is the leases', the cluster's own; the fixed window is
//!   numbered by this instance's clock (an instance whose clock is off by `d` may take from
//!   the window `d` early or late, as around any fixed window's edge).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use status_core::store::EtcdStore;

use super::budget::{Asking, Budget, BudgetError, BudgetWindow, Grant};

/// A budget in etcd, for every instance that names the same key.
#[derive(Debug)]
pub struct EtcdBudget {
    store: EtcdStore,
    key: String,
    capacity: u64,
    window: Duration,
    kind: BudgetWindow,
    timeout: Duration,
    instance: String,
    healed: AtomicU64,
}

impl EtcdBudget {
    /// `capacity` culls per `window` under `key`, counted as `kind`, in the etcd whose members
    /// are at `urls` (`http://host:2379`, several separated by commas); asks that take longer
    /// than 250 ms are refusals. `instance` is written in each slot this instance takes.
    ///
    /// # Errors
    ///
    /// If `urls` are not etcd URLs, `key` is empty, longer than 128 bytes or holds a control
    /// character.
    pub fn new(
        urls: &str,
        key: impl Into<String>,
        capacity: u64,
        window: Duration,
        kind: BudgetWindow,
        instance: impl Into<String>,
    ) -> Result<Self, status_core::Error> {
        let key = String::from_utf8_lossy(&EtcdStore::prefix(&key.into())?)
            .trim_end_matches('/')
            .to_owned();
        let timeout = Duration::from_millis(250);
        Ok(Self {
            store: EtcdStore::open(urls, timeout)?,
            key,
            capacity,
            window: window.max(Duration::from_secs(1)),
            kind,
            timeout,
            instance: instance.into(),
            healed: AtomicU64::new(0),
        })
    }

    /// How long an ask may take before it counts as a refusal.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self.store = self.store.with_timeout(timeout);
        self
    }

    /// Slot keys without a lease this budget deleted.
    #[must_use]
    pub fn healed(&self) -> u64 {
        self.healed.load(Ordering::Relaxed)
    }

    /// The keys of this window's slots, and the lease (in whole seconds) a grant takes.
    fn scope(&self) -> (String, i64) {
        let window_ms = u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX);
        match self.kind {
            BudgetWindow::Sliding => (
                format!("{}/sliding/", self.key),
                i64::try_from(window_ms.div_ceil(1000)).unwrap_or(i64::MAX),
            ),
            BudgetWindow::Fixed => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                let left = window_ms - now % window_ms;
                (
                    format!("{}/fixed/{}/", self.key, now / window_ms),
                    // Past the window's end, so that its last grants are never forgotten early.
                    i64::try_from(left.div_ceil(1000) + 1).unwrap_or(i64::MAX),
                )
            }
        }
    }

    async fn ask(&self) -> Result<Grant, BudgetError> {
        let unreachable = |e: etcd_client::Error| BudgetError::Unreachable(e.to_string());
        let mut client = self.store.client().await.map_err(unreachable)?;
        let (scope, seconds) = self.scope();
        let mut lease = None;
        // A slot another instance took meanwhile: look again (at most once a slot).
        for _ in 0..=self.capacity {
            let taken = self.taken(&mut client, &scope).await?;
            let used = taken.len() as u64;
            let Some(free) = (0..self.capacity).find(|slot| !taken.contains(slot)) else {
                if let Some(id) = lease {
                    let _ = client.lease_revoke(id).await;
                }
                return Ok(Grant::Spent { used });
            };
            let id = match lease {
                Some(id) => id,
                None => {
                    let id = client
                        .lease_grant(seconds, None)
                        .await
                        .map_err(unreachable)?
                        .id();
                    lease = Some(id);
                    id
                }
            };
            let slot = format!("{scope}{free}");
            let answer = client
                .txn(
                    Txn::new()
                        .when([Compare::version(slot.clone(), CompareOp::Equal, 0)])
                        .and_then([TxnOp::put(
                            slot,
                            self.instance.clone(),
                            Some(PutOptions::new().with_lease(id)),
                        )]),
                )
                .await
                .map_err(unreachable)?;
            if answer.succeeded() {
                return Ok(Grant::Token { used: used + 1 });
            }
        }
        Err(BudgetError::Unreachable(
            "every slot was taken by another instance as it was asked".to_owned(),
        ))
    }

    /// The slots taken in `scope`; a slot key without a lease is deleted (it would never
    /// free), and not counted.
    async fn taken(&self, client: &mut Client, scope: &str) -> Result<Vec<u64>, BudgetError> {
        let unreachable = |e: etcd_client::Error| BudgetError::Unreachable(e.to_string());
        let found = client
            .get(
                scope,
                Some(GetOptions::new().with_prefix().with_keys_only()),
            )
            .await
            .map_err(unreachable)?;
        let mut taken = Vec::new();
        for kv in found.kvs() {
            let Some(slot) = kv
                .key()
                .strip_prefix(scope.as_bytes())
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.parse::<u64>().ok())
                .filter(|s| *s < self.capacity)
            else {
                continue;
            };
            if kv.lease() == 0 {
                // Only that version of it: a grant made since stays.
                let healed = client
                    .txn(
                        Txn::new()
                            .when([Compare::mod_revision(
                                kv.key(),
                                CompareOp::Equal,
                                kv.mod_revision(),
                            )])
                            .and_then([TxnOp::delete(kv.key(), None)]),
                    )
                    .await
                    .map_err(unreachable)?;
                if healed.succeeded() {
                    self.healed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        slot,
                        scope,
                        "a cull budget slot without a lease was deleted (it would never free)"
                    );
                    continue;
                }
            }
            taken.push(slot);
        }
        Ok(taken)
    }
}

impl Budget for EtcdBudget {
    fn take(&self) -> Asking<'_> {
        Box::pin(async move {
            let answer = match tokio::time::timeout(self.timeout, self.ask()).await {
                Ok(answer) => answer,
                Err(_) => Err(BudgetError::TimedOut(self.timeout)),
            };
            if answer.is_err() {
                // The next ask goes to the next member.
                self.store.failed();
            }
            answer
        })
    }

    fn describe(&self) -> String {
        let kind = self.kind.name();
        format!(
            "{kind} window in etcd ({} at {}), {} per {} s",
            self.key,
            self.store.describe(),
            self.capacity,
            self.window.as_secs()
        )
    }
}
