//! The instances listed a page at a time, from the keys under the fleet's prefix.

use etcd_client::GetOptions;
use status_checks::store::prefix_end;
use status_core::Error;

use super::tally::entry;
use super::{EtcdFleet, READ_PAGE};
use crate::{unhex, InstancePage, InstanceQuery, InstanceView, MAX_PAGE};

impl EtcdFleet {
    /// A page of instances: of `query.datacenter` (or all), after `query.cursor`, at most
    /// `query.limit` (at most 500). A listed instance is fresh: its key lives with its lease
    /// (etcd keeps no heartbeat time, so its age is 0).
    pub(super) async fn page(&self, query: &InstanceQuery) -> Result<InstancePage, Error> {
        let base = self.inner.instances_key();
        let mut start = base.clone();
        if let Some(dc) = &query.datacenter {
            start.extend_from_slice(dc.as_bytes());
            start.push(0);
        }
        let end = prefix_end(&start);
        if let Some(cursor) = &query.cursor {
            let after = unhex(cursor).ok_or_else(|| Error::invalid("invalid cursor"))?;
            let mut key = base.clone();
            key.extend_from_slice(&after);
            if !key.starts_with(&start) {
                return Err(Error::invalid("invalid cursor: another data center's"));
            }
            // The key right after the cursor's.
            key.push(0);
            start = key;
        }
        let limit = query.limit.clamp(1, MAX_PAGE);
        let mut client = self
            .inner
            .store
            .client()
            .await
            .map_err(|e| Error::unavailable(format!("the fleet store failed: {e}")))?;
        let page = client
            .get(
                start,
                Some(
                    GetOptions::new()
                        .with_range(end)
                        .with_limit(i64::try_from(limit).unwrap_or(READ_PAGE)),
                ),
            )
            .await
            .map_err(|e| {
                self.inner.store.failed();
                Error::unavailable(format!("the fleet store failed: {e}"))
            })?;
        let mut instances = Vec::new();
        for kv in page.kvs() {
            if let Ok(summary) = entry(&kv.key()[base.len()..], kv.value()) {
                instances.push(InstanceView {
                    summary,
                    age_ms: 0,
                    stale: false,
                });
            }
        }
        let next_cursor = page
            .more()
            .then(|| {
                page.kvs()
                    .last()
                    .and_then(|kv| crate::store::cursor_after(&kv.key()[base.len()..], true))
            })
            .flatten();
        Ok(InstancePage {
            instances,
            next_cursor,
        })
    }
}
