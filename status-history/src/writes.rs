//! What one write commits: the unit both stores take.

use crate::incident::IncidentFact;
use crate::model::{AuditRecord, MuteRecord, OverrideRecord};
use crate::tally::Batch;

/// Everything one write commits at once.
#[derive(Debug, Default, Clone)]
pub struct Writes {
    /// Transitions and aggregates.
    pub batch: Batch,
    /// Audit records, oldest first.
    pub audit: Vec<AuditRecord>,
    /// Every mute kept, when they changed (replacing those stored).
    pub mutes: Option<Vec<MuteRecord>>,
    /// Every override in force, when they changed (replacing those stored).
    pub overrides: Option<Vec<OverrideRecord>>,
    /// Mutes ended before their window's end (unmuted, replaced, a maintenance called
    /// off), as they were: a store shared by a fleet keeps them so that every instance ends
    /// its copy ([`HistoryStore::mute_ends`](crate::HistoryStore::mute_ends)); one process's
    /// own store has no one to tell, and drops them.
    pub mute_ends: Vec<MuteRecord>,
    /// Keyed state, as JSON.
    pub state: Vec<(String, String)>,
    /// What the incident tracker said, oldest first, merged by the store into the
    /// incidents it keeps.
    pub incidents: Vec<IncidentFact>,
    /// The tracker's quiet time (ms): how long after it resolved a failure reopens an
    /// incident rather than opening another.
    pub incident_quiet: i64,
    /// When it is written (ms; 0 when not said): open incidents whose every instance has
    /// recovered or gone silent are resolved then ([`sweep`](crate::incident::sweep)).
    pub now: i64,
}

impl Writes {
    /// Whether there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
            && self.audit.is_empty()
            && self.mutes.is_none()
            && self.overrides.is_none()
            && self.mute_ends.is_empty()
            && self.state.is_empty()
            && self.incidents.is_empty()
    }

    /// Folds later writes in (after a failed write, so that nothing is lost or reordered).
    pub fn absorb(&mut self, later: Writes) {
        self.batch.absorb(later.batch);
        self.audit.extend(later.audit);
        if later.mutes.is_some() {
            self.mutes = later.mutes;
        }
        if later.overrides.is_some() {
            self.overrides = later.overrides;
        }
        self.mute_ends.extend(later.mute_ends);
        self.incidents.extend(later.incidents);
        self.incident_quiet = self.incident_quiet.max(later.incident_quiet);
        self.now = self.now.max(later.now);
        for (key, value) in later.state {
            self.state.retain(|(k, _)| *k != key);
            self.state.push((key, value));
        }
    }

    /// Rows it holds: what a bound on a backlog counts.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.batch.transitions.len()
            + self.batch.minutes.len()
            + self.audit.len()
            + self.mute_ends.len()
            + self.state.len()
            + self.incidents.len()
    }

    /// Drops rows past `cap`, the oldest first: transitions, then audit records, then
    /// minute buckets (the oldest minutes); answers how many went.
    pub fn bound(&mut self, cap: usize) -> u64 {
        let mut over = self.rows().saturating_sub(cap);
        let mut lost = 0;
        for list in [
            &mut self.batch.transitions as &mut dyn Trim,
            &mut self.audit,
        ] {
            let n = over.min(list.count());
            list.trim_front(n);
            over -= n;
            lost += n as u64;
        }
        if over > 0 {
            self.batch.minutes.sort_by_key(|(_, b)| b.start);
            let n = over.min(self.batch.minutes.len());
            self.batch.minutes.drain(..n);
            lost += n as u64;
        }
        lost
    }
}

/// A list whose oldest items can be dropped.
trait Trim {
    fn count(&self) -> usize;
    fn trim_front(&mut self, n: usize);
}

impl<T> Trim for Vec<T> {
    fn count(&self) -> usize {
        self.len()
    }
    fn trim_front(&mut self, n: usize) {
        self.drain(..n.min(self.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Bucket, Series, TransitionRecord};
    use status_core::CheckStatus;

    #[test]
    fn a_backlog_past_its_bound_loses_its_oldest_rows_first() {
        let db = Series::Dependency("db".into());
        let mut w = Writes::default();
        for i in 0..5 {
            w.batch.transitions.push(TransitionRecord {
                series: db.clone(),
                at: i,
                from: None,
                to: CheckStatus::Ok,
                message: String::new(),
                blocked_by: vec![],
            });
            w.batch
                .minutes
                .push((db.clone(), Bucket::empty(60 * (10 - i))));
        }
        assert_eq!(w.bound(100), 0);
        assert_eq!(w.bound(3), 7);
        assert_eq!(w.rows(), 3);
        assert!(w.batch.transitions.is_empty());
        let kept: Vec<i64> = w.batch.minutes.iter().map(|(_, b)| b.start).collect();
        assert_eq!(kept, [480, 540, 600], "the newest minutes stay");
    }
}
