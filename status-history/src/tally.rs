//! The pure recorder: told what each series did and when, it keeps the time spent in each
//! level per minute and hands over what to write. No clock, no I/O: the driver tells it the
//! time, and the same code runs under the simulator and the property tests.

use std::collections::BTreeMap;

use status_core::CheckStatus;

use crate::model::{Bucket, Series, Tier, TransitionRecord};

const MINUTE_MS: i64 = 60_000;

/// What to write after a flush: new transitions, and what each minute gained since the last
/// flush. Buckets are increments, added to what the store holds: two runs (or two
/// instances' restarts) in one minute sum, never overwrite each other.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Batch {
    /// Transitions since the last flush, oldest first.
    pub transitions: Vec<TransitionRecord>,
    /// Minute buckets, each with its series: what each minute gained since the last flush.
    pub minutes: Vec<(Series, Bucket)>,
    /// Time is accounted up to here (milliseconds since the Unix epoch), when the batch
    /// carries aggregates.
    pub covered_until: Option<i64>,
}

impl Batch {
    /// Whether there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.transitions.is_empty() && self.minutes.is_empty() && self.covered_until.is_none()
    }

    /// Folds a later batch in: its transitions after these, its minutes added to the same
    /// minutes here (they are increments).
    pub fn absorb(&mut self, later: Batch) {
        self.transitions.extend(later.transitions);
        let mut at: std::collections::HashMap<(Series, i64), usize> = self
            .minutes
            .iter()
            .enumerate()
            .map(|(i, (s, b))| ((s.clone(), b.start), i))
            .collect();
        for (series, bucket) in later.minutes {
            match at.get(&(series.clone(), bucket.start)) {
                Some(&i) => self.minutes[i].1.merge(&bucket),
                None => {
                    at.insert((series.clone(), bucket.start), self.minutes.len());
                    self.minutes.push((series, bucket));
                }
            }
        }
        self.covered_until = later.covered_until.or(self.covered_until);
    }

    /// The minutes' increments rolled up into every tier: each `(series, tier, start)`
    /// once, with the sum of what its minutes gained. What a store adds, tier by tier.
    #[must_use]
    pub fn tiers(&self) -> BTreeMap<(Series, Tier, i64), Bucket> {
        let mut out: BTreeMap<(Series, Tier, i64), Bucket> = BTreeMap::new();
        for (series, minute) in &self.minutes {
            let at = minute.start_time();
            for tier in Tier::ALL {
                let start = tier.floor(at).timestamp();
                out.entry((series.clone(), tier, start))
                    .or_insert_with(|| Bucket::empty(start))
                    .merge(minute);
            }
        }
        out
    }
}

/// One series' running account: what it gained since the last flush.
#[derive(Debug, Default, Clone)]
struct Track {
    /// The level now and since when (ms) time has been accounted.
    level: Option<(CheckStatus, i64)>,
    muted: bool,
    /// The latest minute's increment since the last flush.
    open: Option<Bucket>,
    /// Earlier minutes' increments since the last flush.
    closed: Vec<Bucket>,
    /// Stopped (a dependency removed): dropped once its buckets are written.
    stopped: bool,
}

impl Track {
    /// The bucket of the minute starting at `start` (seconds): the open one, a new one (the
    /// open one closed), or the open one again for a time before it (a clock gone back).
    fn bucket(&mut self, start: i64) -> &mut Bucket {
        match self.open {
            Some(open) if open.start < start => {
                self.closed.push(open);
                self.open = Some(Bucket::empty(start));
            }
            Some(_) => {}
            None => self.open = Some(Bucket::empty(start)),
        }
        self.open
            .as_mut()
            .unwrap_or_else(|| unreachable!("set above"))
    }

    /// Accounts the time from where it stands to `to` (ms) in the current level.
    fn accrue(&mut self, to: i64) {
        let Some((level, since)) = self.level else {
            return;
        };
        let mut t = since;
        while t < to {
            let minute = t.div_euclid(MINUTE_MS) * MINUTE_MS;
            let end = to.min(minute + MINUTE_MS);
            let muted = self.muted;
            #[allow(clippy::cast_sign_loss)] // end > t
            self.bucket(minute / 1000)
                .spent
                .add(level, muted, (end - t) as u64);
            t = end;
        }
        self.level = Some((level, since.max(to)));
    }

    /// Where time is accounted up to, if it is.
    fn since(&self) -> Option<i64> {
        self.level.map(|(_, since)| since)
    }

    /// Hands over what it gained since the last flush, oldest minute first.
    fn take(&mut self) -> impl Iterator<Item = Bucket> + '_ {
        self.closed.drain(..).chain(self.open.take())
    }
}

/// Keeps each series' time in each level per minute, and its transitions, until flushed.
///
/// Time counts from a series' first level (its first check after a start) in the level it
/// was last told, until the next change, a [`stop`](Self::stop) or the flush. A series told
/// nothing is not counted: time before the first check, or while the process was down, is
/// neither up nor down.
#[derive(Debug, Default)]
pub struct Recorder {
    tracks: BTreeMap<Series, Track>,
    transitions: Vec<TransitionRecord>,
}

impl Recorder {
    /// A recorder with nothing told.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A check of the dependency `series` ended at `at` (ms): `failed` if it said OUTAGE,
    /// timed out or panicked; it took `duration_us`; the dependency was `muted` then.
    pub fn checked(
        &mut self,
        series: &Series,
        at: i64,
        failed: bool,
        duration_us: u64,
        muted: bool,
    ) {
        let track = self.tracks.entry(series.clone()).or_default();
        track.stopped = false;
        track.accrue(at);
        track.muted = muted;
        track
            .bucket(at.div_euclid(MINUTE_MS) * 60)
            .count_check(failed, duration_us);
    }

    /// The level of `series` changed to `to` at `at` (ms), because of a check that said
    /// `message`, waiting on `blocked_by`. A change to the level it already has is no
    /// transition; a time before the last accounted is taken as that time (time never
    /// runs backwards in the record).
    pub fn changed(
        &mut self,
        series: &Series,
        at: i64,
        to: CheckStatus,
        message: &str,
        blocked_by: Vec<String>,
    ) {
        let track = self.tracks.entry(series.clone()).or_default();
        track.stopped = false;
        let from = track.level.map(|(level, _)| level);
        if from == Some(to) {
            return;
        }
        track.accrue(at);
        let at = track.since().map_or(at, |since| since.max(at));
        track.level = Some((to, at));
        self.transitions.push(TransitionRecord {
            series: series.clone(),
            at,
            from,
            to,
            message: message.to_owned(),
            blocked_by,
        });
    }

    /// `series` (the system or a group) stands at `level` at `at`: a transition if that
    /// differs from what it was.
    pub fn observe(&mut self, series: &Series, at: i64, level: CheckStatus) {
        self.changed(series, at, level, "", Vec::new());
    }

    /// `series` stops at `at` (a dependency removed): its time stops counting.
    pub fn stop(&mut self, series: &Series, at: i64) {
        if let Some(track) = self.tracks.get_mut(series) {
            track.accrue(at);
            track.level = None;
            track.stopped = true;
        }
    }

    /// The level of `series` now, if told.
    #[must_use]
    pub fn level(&self, series: &Series) -> Option<CheckStatus> {
        self.tracks
            .get(series)
            .and_then(|t| t.level.map(|(level, _)| level))
    }

    /// What to write at `now` (ms): the transitions since the last flush and, with
    /// `aggregates`, what every minute gained since the last such flush, time accounted up
    /// to `now`.
    pub fn flush(&mut self, now: i64, aggregates: bool) -> Batch {
        let mut batch = Batch {
            transitions: std::mem::take(&mut self.transitions),
            ..Batch::default()
        };
        if !aggregates {
            return batch;
        }
        for (series, track) in &mut self.tracks {
            track.accrue(now);
            for bucket in track.take() {
                batch.minutes.push((series.clone(), bucket));
            }
        }
        // Series stopped and written keep no state.
        self.tracks.retain(|_, t| !t.stopped);
        batch.covered_until = Some(now);
        batch
    }

    /// What `series` gained since the last flush with aggregates, time accounted up to
    /// `now` (ms), by minute, oldest first: what a read adds to what the store holds.
    /// Changes nothing.
    #[must_use]
    pub fn unwritten(&self, series: &Series, now: i64) -> Vec<Bucket> {
        let Some(track) = self.tracks.get(series) else {
            return Vec::new();
        };
        let mut track = track.clone();
        track.accrue(now);
        track.take().collect()
    }

    /// The transitions of `series` not yet flushed, oldest first.
    pub fn pending_transitions<'a>(
        &'a self,
        series: &'a Series,
    ) -> impl Iterator<Item = &'a TransitionRecord> + 'a {
        self.transitions.iter().filter(move |t| t.series == *series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Series {
        Series::Dependency("db".into())
    }

    #[test]
    fn time_is_split_at_minute_boundaries_and_counted_from_the_first_level() {
        let mut r = Recorder::new();
        // Nothing told before 30 s: not counted.
        r.changed(&db(), 30_000, CheckStatus::Ok, "up", vec![]);
        r.checked(&db(), 30_000, false, 1_500, false);
        r.changed(
            &db(),
            90_000,
            CheckStatus::Outage,
            "down",
            vec!["net".into()],
        );
        let batch = r.flush(150_000, true);
        assert_eq!(batch.transitions.len(), 2);
        assert_eq!(batch.transitions[1].from, Some(CheckStatus::Ok));
        let minutes: Vec<_> = batch.minutes.iter().map(|(_, b)| *b).collect();
        assert_eq!(minutes.len(), 3);
        assert_eq!(minutes[0].start, 0);
        assert_eq!((minutes[0].spent.ok, minutes[0].spent.outage), (30_000, 0));
        assert_eq!((minutes[0].checks, minutes[0].duration_max_us), (1, 1_500));
        assert_eq!(
            (minutes[1].spent.ok, minutes[1].spent.outage),
            (30_000, 30_000)
        );
        assert_eq!((minutes[2].start, minutes[2].spent.outage), (120, 30_000));
        assert_eq!(batch.covered_until, Some(150_000));
    }

    #[test]
    fn a_second_flush_writes_only_what_changed_and_muted_time_is_apart() {
        let mut r = Recorder::new();
        r.changed(&db(), 0, CheckStatus::Major, "slow", vec![]);
        let _ = r.flush(10_000, true);
        r.checked(&db(), 20_000, false, 10, true);
        let batch = r.flush(30_000, true);
        assert_eq!(batch.minutes.len(), 1);
        let spent = batch.minutes[0].1.spent;
        // What the minute gained since the first flush: 10 s of MAJOR, then 10 s muted.
        assert_eq!((spent.major, spent.muted), (10_000, 10_000));
        assert_eq!(batch.minutes[0].1.checks, 1);
        // A flush without aggregates carries transitions only.
        r.changed(&db(), 40_000, CheckStatus::Ok, "", vec![]);
        let light = r.flush(41_000, false);
        assert_eq!((light.transitions.len(), light.minutes.len()), (1, 0));
        assert_eq!(light.covered_until, None);
    }

    #[test]
    fn a_change_to_the_same_level_or_back_in_time_is_no_transition_and_no_negative_time() {
        let mut r = Recorder::new();
        r.changed(&db(), 10_000, CheckStatus::Ok, "", vec![]);
        r.changed(&db(), 20_000, CheckStatus::Ok, "", vec![]);
        r.changed(&db(), 5_000, CheckStatus::Minor, "", vec![]);
        let batch = r.flush(30_000, true);
        assert_eq!(batch.transitions.len(), 2);
        // The change dated before the last accounting is taken at it (10 s).
        assert_eq!(batch.transitions[1].at, 10_000);
        let spent = batch.minutes[0].1.spent;
        assert_eq!(spent.ok + spent.minor, 20_000);
    }

    #[test]
    fn increments_absorbed_and_rolled_up_add_and_reads_see_the_unwritten_part() {
        let mut r = Recorder::new();
        r.changed(&db(), 0, CheckStatus::Ok, "", vec![]);
        r.checked(&db(), 5_000, false, 100, false);
        assert_eq!(r.unwritten(&db(), 30_000)[0].spent.ok, 30_000);
        let mut first = r.flush(30_000, true);
        assert!(r.unwritten(&db(), 30_000).is_empty(), "nothing unwritten");
        r.changed(&db(), 45_000, CheckStatus::Outage, "", vec![]);
        r.checked(&db(), 45_000, true, 300, false);
        let second = r.flush(90_000, true);
        // A failed write keeps the first batch; the next one is added to it.
        first.absorb(second);
        let minute0 = first.minutes.iter().find(|(_, b)| b.start == 0).unwrap().1;
        assert_eq!((minute0.spent.ok, minute0.spent.outage), (45_000, 15_000));
        assert_eq!(
            (
                minute0.checks,
                minute0.duration_min_us,
                minute0.duration_max_us
            ),
            (2, 100, 300)
        );
        let tiers = first.tiers();
        let hour = tiers[&(db(), Tier::Hour, 0)];
        assert_eq!((hour.spent.ok, hour.spent.outage), (45_000, 45_000));
        assert_eq!(tiers[&(db(), Tier::Day, 0)].spent, hour.spent);
        assert_eq!(tiers.len(), 4, "two minutes, one hour, one day");
    }

    #[test]
    fn a_stopped_series_counts_no_more_time() {
        let mut r = Recorder::new();
        r.changed(&db(), 0, CheckStatus::Ok, "", vec![]);
        r.stop(&db(), 15_000);
        let batch = r.flush(60_000 * 5, true);
        assert_eq!(batch.minutes.len(), 1);
        assert_eq!(batch.minutes[0].1.spent.ok, 15_000);
        assert!(r.flush(60_000 * 6, true).minutes.is_empty());
        assert_eq!(r.level(&db()), None);
    }
}
