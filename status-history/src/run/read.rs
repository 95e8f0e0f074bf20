//! The reads of [`History`]: what the routes and pages ask.

use chrono::{DateTime, Datelike, TimeZone, Utc};

use super::History;
use crate::model::{AuditRecord, Bucket, Series, Tier, TransitionRecord};
use crate::uptime::{DayTile, UptimeReport, Window};
use crate::Error;

impl History {
    /// Time in each level, uptime and SLA of `series` from `from` to `to`, read from the
    /// finest tier still kept at `from` (the window widened to its buckets), with what the
    /// running process has recorded and not yet written: a read never lags the probes.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a window that is not one; [`Error::is_store`] when the
    /// store fails.
    pub async fn uptime(
        &self,
        series: Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<UptimeReport, Error> {
        self.uptime_at(series, from, to, self.now()).await
    }

    /// Time in each level, uptime and SLA of `series` over the last `span`, up to now: the
    /// window and its check against what is kept read one clock, so the longest span kept
    /// (400 days by default) is a window, not a moment too old.
    ///
    /// # Errors
    ///
    /// As [`uptime`](Self::uptime).
    pub async fn uptime_over(
        &self,
        series: Series,
        span: chrono::Duration,
    ) -> Result<UptimeReport, Error> {
        let now = self.now();
        self.uptime_at(series, now - span, now, now).await
    }

    async fn uptime_at(
        &self,
        series: Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<UptimeReport, Error> {
        let window = Window::new(from, to, now, &self.shared.builder.retention)?;
        let buckets = self
            .live_buckets(&series, window.tier, window.from, window.to)
            .await?;
        Ok(UptimeReport::of(series, window, &buckets, self.weights()))
    }

    /// The buckets of `series` in `tier` from `from` to `to`, oldest first (buckets with
    /// nothing in them are absent).
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn buckets(
        &self,
        series: Series,
        tier: Tier,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<crate::Bucket>, Error> {
        self.live_buckets(&series, tier, tier.floor(from), tier.ceil(to))
            .await
    }

    /// The buckets of `series` in `tier` from `from` to `to`, what the store holds plus
    /// what this process has not written yet, oldest first, excluded time moved to muted
    /// time.
    pub(super) async fn live_buckets(
        &self,
        series: &Series,
        tier: Tier,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Bucket>, Error> {
        let mut buckets = self.stored_and_live(series, tier, from, to).await?;
        self.apply_exclusions(series, tier, &mut buckets).await;
        Ok(buckets)
    }

    /// The buckets of `series` in `tier` from `from` to `to`, what the store holds plus
    /// what this process has not written yet, oldest first, as they were recorded.
    pub(super) async fn stored_and_live(
        &self,
        series: &Series,
        tier: Tier,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<Bucket>, Error> {
        // No write commits between the store's answer and the ledger's.
        let _commit = self.shared.commit.read().await;
        let mut buckets = self.shared.store().buckets(series, tier, from, to).await?;
        let now = self.now().timestamp_millis();
        let ledger = self.shared.ledger();
        let minutes = ledger
            .pending
            .batch
            .minutes
            .iter()
            .filter(|(s, _)| s == series)
            .map(|(_, b)| *b)
            .chain(ledger.recorder.unwritten(series, now));
        let (from, to) = (from.timestamp(), to.timestamp());
        for minute in minutes {
            let start = tier.floor(minute.start_time()).timestamp();
            if start < from || start >= to {
                continue;
            }
            match buckets.binary_search_by_key(&start, |b| b.start) {
                Ok(i) => buckets[i].merge(&minute),
                Err(i) => {
                    let mut bucket = Bucket::empty(start);
                    bucket.merge(&minute);
                    buckets.insert(i, bucket);
                }
            }
        }
        Ok(buckets)
    }

    /// The last `days` days of `series` (today included), oldest first, one tile a day
    /// (days with nothing observed included).
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn days(&self, series: Series, days: u32) -> Result<Vec<DayTile>, Error> {
        let (first, end) = self.last_days(days);
        let buckets = self.live_buckets(&series, Tier::Day, first, end).await?;
        Ok(tiles(first, end, &buckets))
    }

    /// The last `days` days of every series of `kind` (`dependency`, `group`), by series:
    /// a page of tiles in one read.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn days_of(
        &self,
        kind: &str,
        days: u32,
    ) -> Result<Vec<(Series, Vec<DayTile>)>, Error> {
        let (first, end) = self.last_days(days);
        let rows = self.shared.store().days_of(kind, first, end).await?;
        let exclusions = self.current_exclusions().await;
        Ok(rows
            .into_iter()
            .map(|(series, mut buckets)| {
                for e in exclusions.iter() {
                    e.apply(&series, Tier::Day, &mut buckets);
                }
                (series, tiles(first, end, &buckets))
            })
            .collect())
    }

    /// The first of the last `days` days and the end of today.
    fn last_days(&self, days: u32) -> (DateTime<Utc>, DateTime<Utc>) {
        let today = Tier::Day.floor(self.now());
        (
            today - chrono::Duration::days(i64::from(days.max(1)) - 1),
            today + Tier::Day.length(),
        )
    }

    /// The latest `limit` transitions of `series`, oldest first.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn transitions(
        &self,
        series: Series,
        limit: usize,
    ) -> Result<Vec<TransitionRecord>, Error> {
        let mut newest_first = self
            .transitions_between(
                &series,
                DateTime::<Utc>::MIN_UTC,
                DateTime::<Utc>::MAX_UTC,
                limit,
            )
            .await?;
        newest_first.reverse();
        Ok(newest_first)
    }

    /// The transitions of `series` at or after `from` and before `to`, the latest `limit`,
    /// newest first: what the store holds and what this process has recorded and not yet
    /// written.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn transitions_between(
        &self,
        series: &Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<TransitionRecord>, Error> {
        let _commit = self.shared.commit.read().await;
        let mut all = self
            .shared
            .store()
            .transitions(series, from, to, limit)
            .await?;
        {
            let ledger = self.shared.ledger();
            let unwritten = ledger
                .pending
                .batch
                .transitions
                .iter()
                .filter(|t| t.series == *series)
                .chain(ledger.recorder.pending_transitions(series))
                .filter(|t| (from.timestamp_millis()..to.timestamp_millis()).contains(&t.at));
            all.extend(unwritten.cloned());
        }
        // Stable: records of one millisecond keep the order they were recorded in.
        all.sort_by_key(|t| t.at);
        all.reverse();
        all.truncate(limit);
        Ok(all)
    }

    /// The latest `limit` audit records before the record `before`, newest first, with
    /// their ids (to page on); the first page includes what was recorded just before.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn audit(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, AuditRecord)>, Error> {
        // Records not yet written have no id yet: the first page waits (at most a second)
        // for the write that gives them one, so that what was just done is in it.
        if before.is_none() && self.unwritten_audit() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), self.flush()).await;
        }
        self.shared.store().audit(before, limit).await
    }

    /// Whether audit records wait to be written (queued for the driver, or held back).
    fn unwritten_audit(&self) -> bool {
        let tx = &self.shared.tx;
        tx.capacity() < tx.max_capacity() || !self.shared.ledger().pending.audit.is_empty()
    }

    /// The calendar month `year`-`month` (UTC) of the system, every group and every
    /// dependency kept, from day buckets.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a month that does not exist, is in the future or is
    /// older than the days kept; [`Error::is_store`] when the store fails.
    pub async fn month(&self, year: i32, month: u32) -> Result<Vec<UptimeReport>, Error> {
        let bad = Error::invalid;
        let from = Utc
            .with_ymd_and_hms(year, month, 1, 0, 0, 0)
            .single()
            .ok_or_else(|| bad("no such month: give it as YYYY-MM"))?;
        let (ny, nm) = if from.month() == 12 {
            (year + 1, 1)
        } else {
            (year, month + 1)
        };
        let to = Utc
            .with_ymd_and_hms(ny, nm, 1, 0, 0, 0)
            .single()
            .ok_or_else(|| bad("no such month"))?;
        let now = self.now();
        let kept = chrono::Duration::from_std(self.shared.builder.retention.days)
            .unwrap_or(chrono::Duration::MAX);
        if now - from > kept {
            return Err(bad("the month is older than the days kept"));
        }
        if from > now {
            return Err(bad("the month has not begun"));
        }
        let window = Window {
            from,
            to,
            tier: Tier::Day,
        };
        let weights = self.weights();
        let store = self.shared.store();
        let mut all = vec![Series::System];
        all.extend(store.series("group").await?);
        all.extend(store.series("dependency").await?);
        let mut reports = Vec::with_capacity(all.len());
        for series in all {
            let buckets = self.live_buckets(&series, Tier::Day, from, to).await?;
            reports.push(UptimeReport::of(series, window, &buckets, weights));
        }
        Ok(reports)
    }
}

/// One tile a day from `first` to `end`, from the day buckets kept (oldest first).
fn tiles(first: DateTime<Utc>, end: DateTime<Utc>, buckets: &[crate::Bucket]) -> Vec<DayTile> {
    let mut tiles = Vec::new();
    let mut kept = buckets.iter().peekable();
    let mut day = first;
    while day < end {
        let tile = match kept.peek() {
            Some(b) if b.start == day.timestamp() => DayTile::of(b),
            _ => DayTile::of(&crate::Bucket::empty(day.timestamp())),
        };
        if kept.peek().is_some_and(|b| b.start <= day.timestamp()) {
            kept.next();
        }
        tiles.push(tile);
        day += Tier::Day.length();
    }
    tiles
}
