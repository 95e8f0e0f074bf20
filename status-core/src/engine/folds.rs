//! What the dependency table folds from its entries: the system's condition and each
//! group's, and what holds up startup, counted under one lock and published as atomics, so
//! that probes and gates read one load instead of a report.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::entry::Entry;
use crate::sync::{lock, read, write};
use crate::{CheckStatus, Error, Group};

/// The most groups a registry holds (one bit each in an entry's count).
pub(crate) const MAX_GROUPS: usize = 64;

/// The folds and the groups they are kept for.
pub(crate) struct Folds {
    counts: Mutex<Counts>,
    groups: RwLock<Vec<Arc<GroupEntry>>>,
    /// The system status: the worst capped status counted.
    condition: AtomicU8,
    /// Polled dependencies never checked yet.
    unchecked: AtomicUsize,
}

#[derive(Default)]
struct Counts {
    /// How many entries add each capped status (by severity) to the system status.
    system: [usize; 4],
    /// The same for each group, by its index in `groups`.
    groups: Vec<GroupCounts>,
}

#[derive(Default)]
struct GroupCounts {
    fold: [usize; 4],
    unchecked: usize,
    members: usize,
}

/// A registered group and its folded state.
#[derive(Debug)]
pub(crate) struct GroupEntry {
    pub(crate) group: Group,
    condition: AtomicU8,
    unchecked: AtomicUsize,
    members: AtomicUsize,
}

impl GroupEntry {
    /// Its condition: the worst capped status of its members (OK without any). One load.
    pub(crate) fn condition(&self) -> CheckStatus {
        severity(self.condition.load(Ordering::Acquire))
    }

    /// Whether each of its polled members has been checked once. One load.
    pub(crate) fn startup_complete(&self) -> bool {
        self.unchecked.load(Ordering::Acquire) == 0
    }

    /// How many dependencies it holds now.
    pub(crate) fn members(&self) -> usize {
        self.members.load(Ordering::Acquire)
    }
}

impl Default for Folds {
    fn default() -> Self {
        Self {
            counts: Mutex::default(),
            groups: RwLock::default(),
            condition: AtomicU8::new(CheckStatus::Ok.severity()),
            unchecked: AtomicUsize::new(0),
        }
    }
}

impl Folds {
    /// Counts `entry` as adding `status` to the folds (`None`: no longer counted), in the
    /// system and in every group that selects it.
    pub(crate) fn count(&self, entry: &Entry, status: Option<CheckStatus>) {
        let mut counts = lock(&self.counts);
        let groups = read(&self.groups);
        let counted = &entry.counted;
        let old = counted_status(counted.status.load(Ordering::Relaxed));
        let old_groups = counted.groups.load(Ordering::Relaxed);
        let new_groups = match status {
            Some(_) => groups
                .iter()
                .enumerate()
                .filter(|(_, g)| g.group.selects(&entry.info))
                .fold(0u64, |bits, (i, _)| bits | 1 << i),
            None => 0,
        };
        let pending = counted.pending.load(Ordering::Relaxed);
        if let Some(old) = old {
            counts.system[usize::from(old.severity())] -= 1;
            for i in bits(old_groups) {
                counts.groups[i].fold[usize::from(old.severity())] -= 1;
            }
        }
        if let Some(new) = status {
            counts.system[usize::from(new.severity())] += 1;
            for i in bits(new_groups) {
                counts.groups[i].fold[usize::from(new.severity())] += 1;
            }
        }
        for i in bits(old_groups & !new_groups) {
            counts.groups[i].members -= 1;
            counts.groups[i].unchecked -= usize::from(pending);
        }
        for i in bits(new_groups & !old_groups) {
            counts.groups[i].members += 1;
            counts.groups[i].unchecked += usize::from(pending);
        }
        counted
            .status
            .store(status.map_or(0, |s| s.severity() + 1), Ordering::Relaxed);
        counted.groups.store(new_groups, Ordering::Relaxed);
        self.publish(&counts, &groups, old_groups | new_groups);
    }

    /// Whether `entry` holds up startup now, in the system and in the groups that count it.
    pub(crate) fn pending(&self, entry: &Entry, pending: bool) {
        let mut counts = lock(&self.counts);
        let groups = read(&self.groups);
        let counted = &entry.counted;
        if counted.pending.swap(pending, Ordering::Relaxed) == pending {
            return;
        }
        let members = counted.groups.load(Ordering::Relaxed);
        for i in bits(members) {
            if pending {
                counts.groups[i].unchecked += 1;
            } else {
                counts.groups[i].unchecked -= 1;
            }
        }
        if pending {
            self.unchecked.fetch_add(1, Ordering::AcqRel);
        } else {
            self.unchecked.fetch_sub(1, Ordering::AcqRel);
        }
        self.publish(&counts, &groups, members);
    }

    /// Registers `group`, counting the `entries` it selects now (read under the lock, so
    /// that no change is missed or counted twice).
    pub(crate) fn add_group(
        &self,
        group: Group,
        entries: impl FnOnce() -> Vec<Arc<Entry>>,
    ) -> Result<Arc<GroupEntry>, Error> {
        let mut counts = lock(&self.counts);
        let mut groups = write(&self.groups);
        if groups.iter().any(|g| g.group.name() == group.name()) {
            return Err(Error::duplicate("group", group.name().as_str()));
        }
        if groups.len() == MAX_GROUPS {
            return Err(Error::invalid(format!(
                "at most {MAX_GROUPS} groups: {} is one too many",
                group.name()
            )));
        }
        let index = groups.len();
        let mut these = GroupCounts::default();
        for entry in entries() {
            let counted = &entry.counted;
            let Some(status) = counted_status(counted.status.load(Ordering::Relaxed)) else {
                continue; // not counted yet: its count will see this group
            };
            if group.selects(&entry.info) {
                these.fold[usize::from(status.severity())] += 1;
                these.members += 1;
                these.unchecked += usize::from(counted.pending.load(Ordering::Relaxed));
                counted.groups.fetch_or(1 << index, Ordering::Relaxed);
            }
        }
        counts.groups.push(these);
        let entry = Arc::new(GroupEntry {
            group,
            condition: AtomicU8::new(CheckStatus::Ok.severity()),
            unchecked: AtomicUsize::new(0),
            members: AtomicUsize::new(0),
        });
        groups.push(Arc::clone(&entry));
        self.publish(&counts, &groups, 1 << index);
        Ok(entry)
    }

    /// The system status. One load.
    pub(crate) fn condition(&self) -> CheckStatus {
        severity(self.condition.load(Ordering::Acquire))
    }

    /// Whether every polled dependency has been checked once. One load.
    pub(crate) fn startup_complete(&self) -> bool {
        self.unchecked.load(Ordering::Acquire) == 0
    }

    /// The group `name`.
    pub(crate) fn group(&self, name: &str) -> Option<Arc<GroupEntry>> {
        read(&self.groups)
            .iter()
            .find(|g| g.group.name().as_str() == name)
            .cloned()
    }

    /// Every group, in the order registered.
    pub(crate) fn groups(&self) -> Vec<Arc<GroupEntry>> {
        read(&self.groups).clone()
    }

    /// Publishes the system's condition and that of the groups in `changed`.
    fn publish(&self, counts: &Counts, groups: &[Arc<GroupEntry>], changed: u64) {
        self.condition
            .store(worst(&counts.system), Ordering::Release);
        for i in bits(changed) {
            let (entry, these) = (&groups[i], &counts.groups[i]);
            entry.condition.store(worst(&these.fold), Ordering::Release);
            entry.unchecked.store(these.unchecked, Ordering::Release);
            entry.members.store(these.members, Ordering::Release);
        }
    }
}

fn worst(fold: &[usize; 4]) -> u8 {
    (0..4u8)
        .rev()
        .find(|&s| fold[usize::from(s)] > 0)
        .unwrap_or(0)
}

fn severity(severity: u8) -> CheckStatus {
    CheckStatus::from_severity(severity).unwrap_or(CheckStatus::Outage)
}

fn counted_status(stored: u8) -> Option<CheckStatus> {
    stored.checked_sub(1).and_then(CheckStatus::from_severity)
}

/// The indices of the bits set in `set`.
fn bits(set: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |i| set & (1 << i) != 0)
}
