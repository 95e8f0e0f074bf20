//! Objectives read from the history: each window's buckets, the store's and the running
//! process's, summed into a report.

use super::History;
use crate::model::Tier;
use crate::objective::{Objective, SloReport, Windows};
use crate::Error;

impl History {
    /// What `objective` reports now: bad and observed time over its window and each burn
    /// window, from the buckets kept and what this process has not written yet (a read never
    /// lags the probes), each window read from the finest tier kept at its start, as uptime
    /// is. Its alerts fire by the burn rates; their `since` is for
    /// [`Alarms`](crate::objective::Alarms) to fill.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when its window starts before what is kept; [`Error::is_store`]
    /// when the store fails.
    pub async fn slo(&self, objective: &Objective) -> Result<SloReport, Error> {
        let now = self.now();
        let windows = Windows::of(objective, now, &self.shared.builder.retention)?;
        let mut read = Vec::new();
        for (tier, from, to) in windows.reads() {
            let buckets = self
                .live_buckets(objective.target(), tier, from, to)
                .await?;
            read.push((tier, buckets));
        }
        let buckets_of = |tier: Tier| {
            read.iter()
                .find(|(t, _)| *t == tier)
                .map_or(&[][..], |(_, b)| b.as_slice())
        };
        let (spent, burns) = windows.spent(buckets_of);
        Ok(SloReport::of(objective, now, &spent, &burns))
    }
}
