//! What an ask reads before it takes a slot: the fixed window in force, whether the cluster
//! knows the budget, the slots taken.

use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};

use super::EtcdBudget;
use crate::cull::budget::BudgetError;

impl EtcdBudget {
    /// The fixed window in force: its lease, created by this ask if none is (one transaction:
    /// the window key absent, then put under a new lease of the window's length). A window
    /// key without a lease is deleted and a new window begins.
    pub(super) async fn fixed_window(&self, client: &mut Client) -> Result<i64, BudgetError> {
        let unreachable = |e: etcd_client::Error| BudgetError::Unreachable(e.to_string());
        let anchor = format!("{}/fixed/window", self.key);
        for _ in 0..3 {
            let found = client
                .get(anchor.as_str(), None)
                .await
                .map_err(unreachable)?;
            if let Some(kv) = found.kvs().first() {
                if kv.lease() != 0 {
                    return Ok(kv.lease());
                }
                let healed = client
                    .txn(
                        Txn::new()
                            .when([Compare::mod_revision(
                                anchor.as_str(),
                                CompareOp::Equal,
                                kv.mod_revision(),
                            )])
                            .and_then([TxnOp::delete(anchor.as_str(), None)]),
                    )
                    .await
                    .map_err(unreachable)?;
                if healed.succeeded() {
                    self.healed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(
                        key = anchor,
                        "a cull budget window without a lease was deleted (it would never end)"
                    );
                }
                continue;
            }
            let lease = client
                .lease_grant(self.window_seconds(), None)
                .await
                .map_err(unreachable)?
                .id();
            let begun = client
                .txn(
                    Txn::new()
                        .when([Compare::create_revision(
                            anchor.as_str(),
                            CompareOp::Equal,
                            0,
                        )])
                        .and_then([TxnOp::put(
                            anchor.as_str(),
                            self.instance.clone(),
                            Some(PutOptions::new().with_lease(lease)),
                        )]),
                )
                .await
                .map_err(unreachable)?;
            if begun.succeeded() {
                return Ok(lease);
            }
            // Another instance began it first: its window is the one.
            let _ = client.lease_revoke(lease).await;
        }
        Err(BudgetError::Unreachable(
            "the fixed window changed as it was read".to_owned(),
        ))
    }
    /// Whether the cluster knows the budget: `None` if so; else the time until it grants
    /// again (the window after it learnt it, begun by this ask if it did not know it).
    pub(super) async fn unknown(
        &self,
        client: &mut Client,
    ) -> Result<Option<Duration>, BudgetError> {
        let unreachable = |e: etcd_client::Error| BudgetError::Unreachable(e.to_string());
        let (known, learning) = (
            format!("{}/known", self.key),
            format!("{}/learning", self.key),
        );
        let read = client
            .txn(Txn::new().and_then([
                TxnOp::get(known.as_str(), None),
                TxnOp::get(learning.as_str(), None),
            ]))
            .await
            .map_err(unreachable)?;
        let mut found = read.op_responses().into_iter().map(|op| match op {
            etcd_client::TxnOpResponse::Get(get) => {
                get.kvs().first().map(etcd_client::KeyValue::lease)
            }
            _ => None,
        });
        let (is_known, learning_lease) = (found.next().flatten(), found.next().flatten());
        if let Some(lease) = learning_lease {
            let left = client
                .lease_time_to_live(lease, None)
                .await
                .map_err(unreachable)?
                .ttl();
            return Ok(Some(Duration::from_secs(
                u64::try_from(left.max(1)).unwrap_or(1),
            )));
        }
        if is_known.is_some() {
            return Ok(None);
        }
        let lease = client
            .lease_grant(self.window_seconds(), None)
            .await
            .map_err(unreachable)?
            .id();
        let learnt = client
            .txn(
                Txn::new()
                    .when([Compare::version(known.as_str(), CompareOp::Equal, 0)])
                    .and_then([
                        TxnOp::put(known.as_str(), self.instance.clone(), None),
                        TxnOp::put(
                            learning.as_str(),
                            self.instance.clone(),
                            Some(PutOptions::new().with_lease(lease)),
                        ),
                    ]),
            )
            .await
            .map_err(unreachable)?;
        if learnt.succeeded() {
            tracing::warn!(
                key = self.key,
                "the cull budget's etcd did not know it (new, or its data lost): nothing is granted for one window"
            );
        } else {
            // Another instance learnt it first, with its window.
            let _ = client.lease_revoke(lease).await;
        }
        Ok(Some(self.window))
    }

    /// The slots taken in `scope`; a slot key without a lease is deleted (it would never
    /// free), and not counted.
    pub(super) async fn taken(
        &self,
        client: &mut Client,
        scope: &str,
    ) -> Result<Vec<u64>, BudgetError> {
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
