//! Exclusions made, listed and removed through the history, and the list every read moves
//! time by: kept in the store (a fleet's PostgreSQL shares it) and read again at most every
//! 15 s, so that another instance's exclusion counts within a beat.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use super::History;
use crate::exclusion::{Exclusion, MAX_EXCLUSION_REASON};
use crate::model::{Bucket, Series, Tier};
use crate::Error;

/// How long the list read from the store is used before it is read again.
const FRESH_FOR: Duration = Duration::from_secs(15);

/// The exclusions as last read from the store.
#[derive(Debug, Default)]
pub(crate) struct Excluded {
    list: Arc<Vec<Exclusion>>,
    read_at: Option<Instant>,
}

/// An exclusion to make, as operators write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewExclusion {
    /// The dependency or group (the caller checks it is registered).
    pub series: Series,
    /// Its start.
    pub from: DateTime<Utc>,
    /// Its end.
    pub to: DateTime<Utc>,
    /// Why: `planned failover`.
    pub reason: String,
    /// Who.
    pub actor: Option<String>,
}

impl History {
    /// Marks `new`'s window as planned maintenance after the fact: what its series spent in
    /// each level inside it counts as muted time from now on, in uptime, SLA reports,
    /// objectives and day tiles. The window is rounded to the buckets of the finest tier
    /// kept at its start, both ends down ([`Exclusion::window`]).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`]: the system as target, a blank, overlong or control-laden
    /// reason, a window reversed, in the future, older than kept or shorter than one bucket;
    /// [`Error::is_conflict`] when it overlaps another exclusion of the same series;
    /// [`Error::is_store`] when the store fails. Nothing is kept on an error.
    pub async fn exclude(&self, new: &NewExclusion) -> Result<Exclusion, Error> {
        if new.series == Series::System {
            return Err(Error::invalid("an exclusion is of a dependency or a group"));
        }
        let reason = status_core::text::printable("reason", &new.reason)
            .map_err(|e| Error::invalid(e.to_string()))?;
        if reason.chars().count() > MAX_EXCLUSION_REASON {
            return Err(Error::invalid(format!(
                "the reason is longer than {MAX_EXCLUSION_REASON} characters"
            )));
        }
        let now = self.now();
        let retention = &self.shared.builder.retention;
        let (from, to, tier) = Exclusion::window(new.from, new.to, now, retention)?;
        let kept = self.shared.store().exclusions().await?;
        if let Some(other) = kept.iter().find(|e| e.overlaps(&new.series, from, to)) {
            return Err(Error::conflict(format!(
                "the window overlaps exclusion {} of the same {} ({} to {}): remove it first",
                other.id,
                new.series.kind(),
                other.from.to_rfc3339(),
                other.to.to_rfc3339()
            )));
        }
        let mut read = Vec::new();
        for (t, a, z) in Exclusion::reads(from, to) {
            read.push((t, self.stored_and_live(&new.series, t, a, z).await?));
        }
        let buckets_of = |t: Tier| {
            read.iter()
                .find(|(k, _)| *k == t)
                .map_or(&[][..], |(_, b)| b.as_slice())
        };
        let exclusion = Exclusion {
            id: 0,
            series: new.series.clone(),
            from,
            to,
            reason: reason.to_owned(),
            actor: new.actor.clone(),
            created: now,
            amounts: Exclusion::amounts(from, to, tier, buckets_of),
        };
        let kept = self.shared.store().exclude(&exclusion).await?;
        self.forget_exclusions();
        Ok(kept)
    }

    /// Every exclusion kept, the oldest window first.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn exclusions(&self) -> Result<Vec<Exclusion>, Error> {
        self.shared.store().exclusions().await
    }

    /// Removes exclusion `id`: its window counts again as it was. `None` when there is none.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn remove_exclusion(&self, id: i64) -> Result<Option<Exclusion>, Error> {
        let removed = self.shared.store().remove_exclusion(id).await?;
        self.forget_exclusions();
        Ok(removed)
    }

    fn forget_exclusions(&self) {
        crate::sync::lock(&self.shared.excluded).read_at = None;
    }

    /// The exclusions every read moves time by: the list last read, read again when older
    /// than 15 s (or changed here). A store that cannot be read keeps the last list, and says
    /// so once.
    pub(super) async fn current_exclusions(&self) -> Arc<Vec<Exclusion>> {
        let (list, fresh) = {
            let e = crate::sync::lock(&self.shared.excluded);
            (
                Arc::clone(&e.list),
                e.read_at.is_some_and(|at| at.elapsed() < FRESH_FOR),
            )
        };
        if fresh || !self.shared.store().is_open() {
            return list;
        }
        match self.shared.store().exclusions().await {
            Ok(read) => {
                let read = Arc::new(read);
                let mut e = crate::sync::lock(&self.shared.excluded);
                e.list = Arc::clone(&read);
                e.read_at = Some(Instant::now());
                read
            }
            Err(err) => {
                tracing::warn!("exclusions could not be read, the last ones read apply: {err}");
                crate::sync::lock(&self.shared.excluded).read_at = Some(Instant::now());
                list
            }
        }
    }

    /// Moves the excluded time of `buckets` (of `series` in `tier`) to muted time.
    pub(super) async fn apply_exclusions(
        &self,
        series: &Series,
        tier: Tier,
        buckets: &mut [Bucket],
    ) {
        if matches!(series, Series::System) {
            return;
        }
        for e in self.current_exclusions().await.iter() {
            e.apply(series, tier, buckets);
        }
    }
}
