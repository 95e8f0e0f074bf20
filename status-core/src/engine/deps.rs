//! The dependency table: every registered dependency, the generations that tell the report
//! cache when to rebuild, and the system condition kept up to date on every change, so that
//! gates and probes read one atomic instead of a report.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::time::Instant;

use super::entry::{Entry, EntryConfig, EntryState, Recorded};
use super::folds::{Folds, GroupEntry};
use super::graph;
use super::run::Executed;
use crate::readiness::holds_up_startup;
use crate::sync::{lock, read, write};
use crate::{CheckStatus, DependencyId, Error, Group};

/// The registered dependencies and what is folded from them.
pub(crate) struct DependencyTable {
    entries: RwLock<HashMap<DependencyId, Arc<Entry>>>,
    /// Bumped when what a report shows changes beyond timestamps: a status, staleness,
    /// flapping, the set of dependencies.
    status_gen: AtomicU64,
    /// Bumped by every recorded result.
    check_gen: AtomicU64,
    /// The system's condition and each group's, and what holds up startup.
    folds: Folds,
}

impl Default for DependencyTable {
    fn default() -> Self {
        Self {
            entries: RwLock::default(),
            status_gen: AtomicU64::new(0),
            check_gen: AtomicU64::new(0),
            folds: Folds::default(),
        }
    }
}

impl DependencyTable {
    /// Adds `entry`.
    ///
    /// # Errors
    ///
    /// A duplicate id, or parents that lead back to it. Nothing changes on error.
    pub(crate) fn insert(&self, entry: &Arc<Entry>) -> Result<(), Error> {
        let id = &entry.info.id;
        {
            let mut entries = write(&self.entries);
            if entries.contains_key(id) {
                return Err(Error::duplicate("dependency", id.as_str()));
            }
            if graph::reaches(&entries, &entry.info.parents, id) {
                return Err(Error::cycle(id.as_str()));
            }
            entries.insert(id.clone(), Arc::clone(entry));
        }
        let state = lock(&entry.state);
        self.folds.count(entry, Some(state.folded));
        if holds_up_startup(entry.is_passive(), state.result.checked) {
            self.folds.pending(entry, true);
        }
        drop(state);
        self.status_gen.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Removes the dependency `id`.
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Entry>> {
        let entry = write(&self.entries).remove(id)?;
        let state = lock(&entry.state);
        self.folds.pending(&entry, false);
        self.folds.count(&entry, None);
        drop(state);
        self.status_gen.fetch_add(1, Ordering::AcqRel);
        Some(entry)
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Entry>> {
        read(&self.entries).get(id).cloned()
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        read(&self.entries).contains_key(id)
    }

    pub(crate) fn len(&self) -> usize {
        read(&self.entries).len()
    }

    pub(crate) fn all(&self) -> Vec<Arc<Entry>> {
        read(&self.entries).values().cloned().collect()
    }

    /// Whether `entry` is the one registered under its id (not removed, not replaced).
    pub(crate) fn is_registered(&self, entry: &Arc<Entry>) -> bool {
        read(&self.entries)
            .get(&entry.info.id)
            .is_some_and(|e| Arc::ptr_eq(e, entry))
    }

    /// Records a result of `entry`; `None` if it is no longer registered. This is where
    /// polled and pushed results enter alike.
    pub(crate) fn record(
        &self,
        entry: &Arc<Entry>,
        executed: Executed,
        wall: chrono::DateTime<chrono::Utc>,
        config: EntryConfig,
    ) -> Option<Recorded> {
        if !self.is_registered(entry) {
            return None;
        }
        let finished = executed.finished;
        let recorded = {
            let mut state = lock(&entry.state);
            let held = holds_up_startup(entry.is_passive(), state.result.checked);
            let recorded = state.record(&entry.info, executed, wall, config);
            if held && !holds_up_startup(entry.is_passive(), state.result.checked) {
                self.folds.pending(entry, false);
            }
            self.refold(entry, &mut state, finished);
            recorded
        };
        self.check_gen.fetch_add(1, Ordering::AcqRel);
        if recorded.significant {
            self.status_gen.fetch_add(1, Ordering::AcqRel);
        }
        Some(recorded)
    }

    /// The entries whose result aged (turned stale or idle) or stopped being aged since last
    /// reported, with their status before; the generations and the fold are updated.
    pub(crate) fn sweep_aged(&self, now: Instant) -> Vec<(Arc<Entry>, CheckStatus)> {
        let mut changed = Vec::new();
        for entry in self.all() {
            let mut state = lock(&entry.state);
            let aged = state.is_aged(&entry.info, now);
            if aged != state.aged_reported {
                state.aged_reported = aged;
                let previous = state.result.status;
                self.refold(&entry, &mut state, now);
                drop(state);
                changed.push((entry, previous));
            }
        }
        if !changed.is_empty() {
            self.status_gen.fetch_add(1, Ordering::AcqRel);
        }
        changed
    }

    /// Counts what `entry` adds to the system status now, if it changed.
    fn refold(&self, entry: &Entry, state: &mut EntryState, now: Instant) {
        let folded = entry
            .info
            .urgency
            .cap(state.reported_status(&entry.info, now));
        if folded != state.folded {
            self.folds.count(entry, Some(folded));
            state.folded = folded;
        }
    }

    /// The system status, folded from every dependency's capped, reported status. One
    /// atomic load.
    pub(crate) fn condition(&self) -> CheckStatus {
        self.folds.condition()
    }

    /// Whether every polled dependency has been checked once. One atomic load.
    pub(crate) fn startup_complete(&self) -> bool {
        self.folds.startup_complete()
    }

    /// Registers `group`: every id it names is registered, every tag it names is carried by
    /// a registered dependency.
    ///
    /// # Errors
    ///
    /// An unknown id or tag, a duplicate name, one group too many. Nothing changes on error.
    pub(crate) fn add_group(&self, group: Group) -> Result<Arc<GroupEntry>, Error> {
        {
            let entries = read(&self.entries);
            if let Some(id) = group.ids().iter().find(|id| !entries.contains_key(*id)) {
                return Err(Error::unknown_dependency(id.as_str()));
            }
            if let Some(tag) = group
                .tags()
                .iter()
                .find(|tag| !entries.values().any(|e| e.info.tags.contains(*tag)))
            {
                return Err(Error::invalid(format!(
                    "group {}: no registered dependency is tagged {tag:?}",
                    group.name()
                )));
            }
            // A member whose urgency caps it better than the group's failing status can never
            // fail it by its status (a Strong member gives MAJOR at worst): said when the group
            // is added. Not refused: `strict` readiness and holds still fail such a group.
            let (can, cannot): (Vec<_>, Vec<_>) = entries
                .values()
                .filter(|e| group.selects(&e.info))
                .map(|e| (e.info.id().clone(), e.info.urgency()))
                .partition(|(_, urgency)| group.fails(urgency.cap(CheckStatus::Outage)));
            let named = |members: &[(DependencyId, crate::Urgency)]| {
                members
                    .iter()
                    .map(|(id, urgency)| format!("{id} ({urgency})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            if can.is_empty() {
                tracing::warn!(
                    group = %group.name(),
                    fails_on = %group.fails_on(),
                    "no member can ever fail this group by its status, their urgencies capping \
                     them ({}): only strict readiness, holds and startup can; fail it on a \
                     better status, or add a member that can",
                    named(&cannot)
                );
            } else if !cannot.is_empty() {
                tracing::warn!(
                    group = %group.name(),
                    fails_on = %group.fails_on(),
                    "members that can never fail this group by their status, their urgencies \
                     capping them: {}",
                    named(&cannot)
                );
            }
        }
        let added = self.folds.add_group(group, || self.all())?;
        self.status_gen.fetch_add(1, Ordering::AcqRel);
        Ok(added)
    }

    /// The group `name`.
    pub(crate) fn group(&self, name: &str) -> Option<Arc<GroupEntry>> {
        self.folds.group(name)
    }

    /// Every group, in the order registered.
    pub(crate) fn groups(&self) -> Vec<Arc<GroupEntry>> {
        self.folds.groups()
    }

    /// The reported status of `id` now (staleness applied), if registered.
    pub(crate) fn status_of(&self, id: &DependencyId, now: Instant) -> Option<CheckStatus> {
        let entry = self.get(id.as_str())?;
        let state = lock(&entry.state);
        Some(state.reported_status(&entry.info, now))
    }

    /// Something a report shows changed outside the table (a mute): build it again.
    pub(crate) fn touch(&self) {
        self.status_gen.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn generations(&self) -> (u64, u64) {
        (
            self.status_gen.load(Ordering::Acquire),
            self.check_gen.load(Ordering::Acquire),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::check::CheckOutcome;
    use crate::{check, Dependency, Urgency};

    const CONFIG: EntryConfig = EntryConfig {
        flap_window: 20,
        flap_threshold: 6,
    };

    fn entry(id: &str, urgency: Urgency, now: Instant) -> Arc<Entry> {
        let dep = Dependency::builder(id, check::tiered(|| async { CheckStatus::Ok }))
            .urgency(urgency)
            .failures_before_outage(1)
            .period(Duration::from_secs(1))
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap();
        Arc::new(Entry::new(
            dep.info,
            Some(dep.check),
            now,
            chrono::DateTime::UNIX_EPOCH,
            10,
        ))
    }

    fn executed(status: CheckStatus, finished: Instant) -> Executed {
        Executed {
            outcome: CheckOutcome::new(status, ""),
            kind: crate::RunOutcome::of(status),
            duration: Duration::ZERO,
            finished,
        }
    }

    #[test]
    fn the_condition_follows_every_change() {
        let table = DependencyTable::default();
        let now = Instant::now();
        let wall = chrono::DateTime::UNIX_EPOCH;
        let db = entry("db", Urgency::Required, now);
        let cache = entry("cache", Urgency::Weak, now);
        table.insert(&db).unwrap();
        table.insert(&cache).unwrap();
        assert_eq!(
            table.condition(),
            CheckStatus::Major,
            "not checked yet is MAJOR"
        );
        assert!(!table.startup_complete());
        table.record(&db, executed(CheckStatus::Ok, now), wall, CONFIG);
        table.record(&cache, executed(CheckStatus::Outage, now), wall, CONFIG);
        assert!(table.startup_complete());
        assert_eq!(
            table.condition(),
            CheckStatus::Minor,
            "a weak outage is MINOR"
        );
        table.record(&db, executed(CheckStatus::Outage, now), wall, CONFIG);
        assert_eq!(table.condition(), CheckStatus::Outage);
        table.remove("db");
        assert_eq!(table.condition(), CheckStatus::Minor);
        // Staleness: the cache's result ages past 3 periods + timeout.
        table.record(&cache, executed(CheckStatus::Ok, now), wall, CONFIG);
        assert_eq!(table.condition(), CheckStatus::Ok);
        let later = now + Duration::from_secs(10);
        assert_eq!(table.sweep_aged(later).len(), 1);
        assert_eq!(
            table.condition(),
            CheckStatus::Minor,
            "stale is MAJOR, capped by Weak"
        );
    }
}
