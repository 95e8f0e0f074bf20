//! Exclusions: a past window of a dependency or a group marked as planned maintenance after
//! the fact. Its time counts as neither good nor bad: what the series spent in each level
//! inside it is moved to muted time, in every tier, so that uptime, SLA reports, objectives
//! and the page's day tiles all read it the same way. Pure: the amounts are computed once,
//! when the exclusion is made, from the finest buckets kept over its window, and kept with
//! it; a read moves them.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::model::{Bucket, Series, Spent, Tier};
use crate::uptime::{iso, Window};
use crate::{Error, Retention};

/// The longest reason an exclusion keeps, in characters.
pub const MAX_EXCLUSION_REASON: usize = 500;

/// What one bucket had in each level inside an exclusion's window (muted time apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amount {
    /// The bucket's tier.
    pub tier: Tier,
    /// The bucket's start (Unix seconds).
    pub start: i64,
    /// Its time in each level inside the window, moved to muted time at a read.
    pub spent: Spent,
}

/// A past window of a series that counts as planned maintenance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusion {
    /// Its id in the store (0 before it is kept).
    pub id: i64,
    /// The dependency or group.
    pub series: Series,
    /// Its start, at a bucket's start.
    pub from: DateTime<Utc>,
    /// Its end (excluded), at a bucket's start.
    pub to: DateTime<Utc>,
    /// Why.
    pub reason: String,
    /// Who made it.
    pub actor: Option<String>,
    /// When it was made.
    pub created: DateTime<Utc>,
    /// What each bucket had inside it when it was made.
    pub amounts: Vec<Amount>,
}

impl Exclusion {
    /// The window asked for, `from` to `to` at `now`, rounded to the buckets of the finest
    /// tier kept at `from` (minutes within a day, hours within a month, days beyond): both
    /// ends down to their bucket, so that the bucket still being written is never part of
    /// it. Answers the window and that tier.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `to` is not after `from`, `to` is after `now`, `from` is
    /// before the days kept, or the window is shorter than one bucket of its tier.
    pub fn window(
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        now: DateTime<Utc>,
        retention: &Retention,
    ) -> Result<(DateTime<Utc>, DateTime<Utc>, Tier), Error> {
        if to > now {
            return Err(Error::invalid(
                "`to` is in the future: only past time is excluded",
            ));
        }
        let tier = Window::new(from, to, now, retention)?.tier;
        let (from, to) = (tier.floor(from), tier.floor(to));
        if to <= from {
            return Err(Error::invalid(
                format!(
                    "the window is shorter than one {tier:?} (its resolution: windows older than \
                 the minutes kept are whole hours, older than the hours kept whole days)"
                )
                .to_lowercase(),
            ));
        }
        Ok((from, to, tier))
    }

    /// What to read to compute the amounts of `from`..`to` rounded to `tier`: each tier's
    /// buckets covering the window.
    #[must_use]
    pub fn reads(
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Vec<(Tier, DateTime<Utc>, DateTime<Utc>)> {
        Tier::ALL
            .iter()
            .map(|t| (*t, t.floor(from), t.ceil(to)))
            .collect()
    }

    /// The amounts of `from`..`to` (rounded to `tier`), from the buckets read per tier
    /// ([`reads`](Self::reads)): a bucket wholly inside gives all its levels' time; a coarser
    /// bucket the window cuts gives the time of the `tier` buckets inside the cut.
    #[must_use]
    pub fn amounts<'a>(
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        tier: Tier,
        read: impl Fn(Tier) -> &'a [Bucket],
    ) -> Vec<Amount> {
        let (from_s, to_s) = (from.timestamp(), to.timestamp());
        let levels = |s: Spent| Spent { muted: 0, ..s };
        let mut out = Vec::new();
        for t in Tier::ALL {
            let length = t.length().num_seconds();
            for b in read(t) {
                let (start, end) = (b.start, b.start + length);
                if end <= from_s || start >= to_s {
                    continue;
                }
                let spent = if start >= from_s && end <= to_s {
                    levels(b.spent)
                } else if t > tier {
                    let (a, z) = (start.max(from_s), end.min(to_s));
                    read(tier)
                        .iter()
                        .filter(|f| f.start >= a && f.start < z)
                        .fold(Spent::default(), |sum, f| sum.plus(levels(f.spent)))
                } else {
                    continue;
                };
                if spent.unmuted() > 0 {
                    out.push(Amount {
                        tier: t,
                        start,
                        spent,
                    });
                }
            }
        }
        out
    }

    /// Moves, in `buckets` (of `series` in `tier`), what this exclusion had in each level
    /// to muted time.
    pub fn apply(&self, series: &Series, tier: Tier, buckets: &mut [Bucket]) {
        if &self.series != series {
            return;
        }
        for a in self.amounts.iter().filter(|a| a.tier == tier) {
            if let Ok(i) = buckets.binary_search_by_key(&a.start, |b| b.start) {
                let s = &mut buckets[i].spent;
                let moved = [
                    (&mut s.ok, a.spent.ok),
                    (&mut s.minor, a.spent.minor),
                    (&mut s.major, a.spent.major),
                    (&mut s.outage, a.spent.outage),
                ]
                .into_iter()
                .map(|(slot, ms)| {
                    let taken = ms.min(*slot);
                    *slot -= taken;
                    taken
                })
                .sum::<u64>();
                s.muted += moved;
            }
        }
    }

    /// The time it moved in `tier` over `from`..`to` (Unix seconds): what an SLA report
    /// says was excluded.
    #[must_use]
    pub fn excluded_ms(&self, tier: Tier, from: i64, to: i64) -> u64 {
        self.amounts
            .iter()
            .filter(|a| a.tier == tier && a.start >= from && a.start < to)
            .map(|a| a.spent.unmuted())
            .sum()
    }

    /// Whether its window and `other`'s of the same series overlap.
    #[must_use]
    pub fn overlaps(&self, series: &Series, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        &self.series == series && self.from < to && from < self.to
    }

    /// The amounts as kept: `[[tier, start, ok, minor, major, outage], …]`.
    #[must_use]
    pub fn amounts_json(&self) -> String {
        let rows: Vec<[i64; 6]> = self
            .amounts
            .iter()
            .map(|a| {
                let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                [
                    a.tier.code(),
                    a.start,
                    ms(a.spent.ok),
                    ms(a.spent.minor),
                    ms(a.spent.major),
                    ms(a.spent.outage),
                ]
            })
            .collect();
        serde_json::to_string(&rows).unwrap_or_default()
    }

    /// The amounts kept by [`amounts_json`](Self::amounts_json); rows that do not read are
    /// skipped.
    #[must_use]
    pub fn amounts_from_json(json: &str) -> Vec<Amount> {
        let rows: Vec<[i64; 6]> = serde_json::from_str(json).unwrap_or_default();
        rows.into_iter()
            .filter_map(|[tier, start, ok, minor, major, outage]| {
                let ms = |v: i64| u64::try_from(v).ok();
                Some(Amount {
                    tier: Tier::from_code(tier)?,
                    start,
                    spent: Spent {
                        ok: ms(ok)?,
                        minor: ms(minor)?,
                        major: ms(major)?,
                        outage: ms(outage)?,
                        muted: 0,
                    },
                })
            })
            .collect()
    }
}

impl Serialize for Exclusion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Exclusion", 8)?;
        s.serialize_field("id", &self.id)?;
        match &self.series {
            Series::Dependency(id) => s.serialize_field("dependency", id)?,
            Series::Group(name) => s.serialize_field("group", name)?,
            Series::System => s.serialize_field("system", &true)?,
        }
        s.serialize_field("from", &iso(self.from))?;
        s.serialize_field("to", &iso(self.to))?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("actor", &self.actor)?;
        s.serialize_field("created", &iso(self.created))?;
        let excluded: u64 = self
            .amounts
            .iter()
            .filter(|a| a.tier == Tier::Day)
            .map(|a| a.spent.unmuted())
            .sum();
        s.serialize_field("excludedMs", &excluded)?;
        s.end()
    }
}
