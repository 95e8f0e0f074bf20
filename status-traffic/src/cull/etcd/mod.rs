//! Budgets kept in etcd, shared by a fleet: a grant is a slot key taken by one linearizable
//! transaction (compare: the slot is free; then: put it under a lease that ends with the
//! window), so a budget never grants past its capacity, even across a leader change.
//!
//! | key | what |
//! |---|---|
//! | `{key}/sliding/{slot}` | a grant of the last window: its lease lasts the window |
//! | `{key}/fixed/window` | the window in force: a key under a lease that lasts the window |
//! | `{key}/fixed/slots/{slot}` | a grant of the window in force: under the window's lease |
//! | `{key}/known` | the cluster knows the budget (no lease) |
//! | `{key}/learning` | the window after it learnt it, spent: under a lease of the window |
//!
//! Slots are numbered below the capacity: at most `capacity` keys can live at once, and a
//! slot taken at `t` is free again no sooner than `t + window` (etcd counts a lease from its
//! grant, in whole seconds rounded up, and a new leader extends every lease: both err towards
//! fewer grants). A fixed window is the cluster's, not a calendar's: it begins with the first
//! ask after the last one ended (one transaction creates its key under a new lease), every
//! grant in it is put under that lease (compared in the same transaction), and all of them
//! end together with it. No instance's clock is read, so instances whose clocks disagree
//! share one window and never grant past the capacity.
//!
//! Safe whatever the store does:
//! - **unreachable, slow, or without quorum**: every call asks for a leader and has the ask's
//!   deadline; an ask not answered in time is a refusal. A grant whose answer was lost stays
//!   taken: spent, never free.
//! - **a leader change**: a transaction is committed by a majority or not at all; a grant is
//!   never made twice.
//! - **garbage**: a key under the budget that is no slot is ignored; a slot key without a
//!   lease (written by hand, it would never expire) is deleted and logged.
//! - **clocks**: both windows are the leases', the cluster's own; no instance's clock counts.
//! - **a window key without a lease** (written by hand, the window would never end) is
//!   deleted and logged, and a new window begins.
//! - **restarted empty, or new**: `{key}/known` (no lease) says the cluster knows the budget.
//!   Where it is missing (an etcd whose data was lost forgot the grants with it, or the
//!   budget is new), one transaction writes it with `{key}/learning` under a lease of the
//!   window, and nothing is granted while `learning` lives ([`Grant::Unknown`]): the
//!   forgotten window counts as spent, so the capacity holds across the loss.
//!   [`EtcdBudget::vouch`] is an operator's word that nothing was forgotten.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use status_checks::store::EtcdStore;

mod window;

use super::budget::{Asking, Budget, BudgetError, BudgetWindow, Grant, Vouching};

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

    /// The window's length in whole seconds, as a lease asks for it.
    fn window_seconds(&self) -> i64 {
        i64::try_from(self.window.as_millis().div_ceil(1000)).unwrap_or(i64::MAX)
    }

    /// An operator's word that the cluster has forgotten no grant of this budget (a fleet
    /// and a cluster both new, a test): it grants at once, without counting a window as spent
    /// first. Never call it at every start: a cluster that lost its data would then forget
    /// grants silently.
    ///
    /// # Errors
    ///
    /// etcd unreachable.
    pub async fn vouch(&self) -> Result<(), BudgetError> {
        let unreachable = |e: etcd_client::Error| {
            // The next call goes to the next member.
            self.store.failed();
            BudgetError::Unreachable(e.to_string())
        };
        let mut client = self.store.client().await.map_err(unreachable)?;
        client
            .txn(Txn::new().and_then([
                TxnOp::put(format!("{}/known", self.key), self.instance.clone(), None),
                TxnOp::delete(format!("{}/learning", self.key), None),
            ]))
            .await
            .map_err(unreachable)?;
        Ok(())
    }

    async fn ask(&self) -> Result<Grant, BudgetError> {
        let unreachable = |e: etcd_client::Error| BudgetError::Unreachable(e.to_string());
        let mut client = self.store.client().await.map_err(unreachable)?;
        if let Some(left) = self.unknown(&mut client).await? {
            return Ok(Grant::Unknown { left });
        }
        // The fixed window's grants go under its lease, compared in each grant's transaction
        // (a grant never outlives the window it was counted in); a sliding grant under a lease
        // of its own.
        let (scope, mut window) = match self.kind {
            BudgetWindow::Sliding => (format!("{}/sliding/", self.key), None),
            BudgetWindow::Fixed => (
                format!("{}/fixed/slots/", self.key),
                Some(self.fixed_window(&mut client).await?),
            ),
        };
        let anchor = format!("{}/fixed/window", self.key);
        let mut lease = window;
        // A slot another instance took meanwhile: look again (at most once a slot).
        for _ in 0..=self.capacity {
            let taken = self.taken(&mut client, &scope).await?;
            let used = taken.len() as u64;
            let Some(free) = (0..self.capacity).find(|slot| !taken.contains(slot)) else {
                if let (Some(id), None) = (lease, window) {
                    let _ = client.lease_revoke(id).await;
                }
                return Ok(Grant::Spent { used });
            };
            let id = match lease {
                Some(id) => id,
                None => {
                    let id = client
                        .lease_grant(self.window_seconds(), None)
                        .await
                        .map_err(unreachable)?
                        .id();
                    lease = Some(id);
                    id
                }
            };
            let slot = format!("{scope}{free}");
            let mut compares = vec![Compare::version(slot.clone(), CompareOp::Equal, 0)];
            if window.is_some() {
                // Still the window counted: not one that ended (and a new one began) since.
                compares.push(Compare::lease(anchor.as_str(), CompareOp::Equal, id));
            }
            let answer = client
                .txn(Txn::new().when(compares).and_then([TxnOp::put(
                    slot,
                    self.instance.clone(),
                    Some(PutOptions::new().with_lease(id)),
                )]))
                .await
                .map_err(unreachable)?;
            if answer.succeeded() {
                return Ok(Grant::Token { used: used + 1 });
            }
            if let Some(counted) = window {
                // The window may have ended as it was asked (its lease expired, its slots
                // with it): ask in the one there is now, rather than spend every try
                // comparing against a lease that is gone.
                let now = self.fixed_window(&mut client).await?;
                if now != counted {
                    window = Some(now);
                    lease = window;
                }
            }
        }
        Err(BudgetError::Unreachable(
            "every slot was taken by another instance as it was asked".to_owned(),
        ))
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

    fn vouch(&self) -> Vouching<'_> {
        Box::pin(EtcdBudget::vouch(self))
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
