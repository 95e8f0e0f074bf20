//! Which buckets an objective reads: its window and each burn window, aligned to the tier
//! that covers each, and the time spent in each summed from the buckets read.

use chrono::{DateTime, Utc};

use super::{Objective, BURN_WINDOWS};
use crate::model::{Bucket, Spent, Tier};
use crate::uptime::Window;
use crate::{Error, Retention};

/// The windows an objective reads at a moment: its own, then each of [`BURN_WINDOWS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Windows {
    /// The objective's window.
    pub window: Window,
    /// Each burn window, in [`BURN_WINDOWS`]'s order.
    pub burns: Vec<Window>,
}

impl Windows {
    /// The windows of `objective` at `now`, each read from the finest tier still kept at
    /// its start and widened to its buckets, as uptime reads them.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when a window starts before what `retention` keeps.
    pub fn of(
        objective: &Objective,
        now: DateTime<Utc>,
        retention: &Retention,
    ) -> Result<Self, Error> {
        let back = |length| Window::new(now - length, now, now, retention);
        Ok(Self {
            window: back(objective.window())?,
            burns: BURN_WINDOWS
                .iter()
                .map(|w| back(w.length()))
                .collect::<Result<_, _>>()?,
        })
    }

    /// What to read, per tier: from the earliest start to the latest end of its windows
    /// each tier once.
    #[must_use]
    pub fn reads(&self) -> Vec<(Tier, DateTime<Utc>, DateTime<Utc>)> {
        let mut reads: Vec<(Tier, DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for w in std::iter::once(&self.window).chain(&self.burns) {
            match reads.iter_mut().find(|(tier, ..)| *tier == w.tier) {
                Some((_, from, to)) => {
                    *from = (*from).min(w.from);
                    *to = (*to).max(w.to);
                }
                None => reads.push((w.tier, w.from, w.to)),
            }
        }
        reads
    }

    /// The time spent over the objective's window and each burn window, from the buckets
    /// read per tier (`read`: tier → its buckets, oldest first).
    #[must_use]
    pub fn spent<'a>(&self, read: impl Fn(Tier) -> &'a [Bucket]) -> (Spent, Vec<Spent>) {
        let sum = |w: &Window| spent_in(read(w.tier), w);
        (sum(&self.window), self.burns.iter().map(sum).collect())
    }
}

/// The time spent in the buckets of `buckets` that start inside `window`.
#[must_use]
pub fn spent_in(buckets: &[Bucket], window: &Window) -> Spent {
    let (from, to) = (window.from.timestamp(), window.to.timestamp());
    buckets
        .iter()
        .filter(|b| b.start >= from && b.start < to)
        .fold(Spent::default(), |total, b| total.plus(b.spent))
}
