//! The mutes in force or scheduled, and the registry's mute API.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::Registry;
use crate::event::Event;
use crate::mute::{Mute, MuteWindow, MAX_MUTES};
use crate::sync::lock;
use crate::{DependencyId, Error};

/// One mute per dependency at most.
#[derive(Default)]
pub(crate) struct Mutes {
    table: Mutex<BTreeMap<DependencyId, Arc<Mute>>>,
    /// How many are kept: a report's build skips the lock while there are none.
    count: AtomicUsize,
    /// When the last sweep looked: a window that started since is announced.
    swept: Mutex<Option<Instant>>,
    /// Dependencies muted or unmuted in this run: a kept mute is then not put back.
    touched: Mutex<std::collections::BTreeSet<DependencyId>>,
}

impl Mutes {
    /// The mute of `id` in force at `now`, if any. An atomic load while none is kept.
    pub(crate) fn in_force(&self, id: &DependencyId, now: Instant) -> Option<Arc<Mute>> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        lock(&self.table)
            .get(id)
            .filter(|m| m.in_force(now))
            .map(|m| Arc::new(m.at(now)))
    }

    /// When the next kept mute starts or ends after `now`, if any: a report showing mutes
    /// is built again then.
    pub(crate) fn next_edge(&self, now: Instant) -> Option<Instant> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        lock(&self.table)
            .values()
            .flat_map(|m| [m.starts, m.ends])
            .filter(|edge| *edge > now)
            .min()
    }

    /// Drops the mutes that ended by `now`, and those of dependencies `registered` says are
    /// gone; whether any ended or started since the last sweep (so the reports change).
    fn sweep(&self, now: Instant, registered: impl Fn(&DependencyId) -> bool) -> bool {
        let seen = lock(&self.swept).replace(now).unwrap_or(now);
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut table = lock(&self.table);
        let started = table.values().any(|m| m.starts > seen && m.starts <= now);
        let before = table.len();
        table.retain(|id, m| !m.is_over(now) && registered(id));
        self.count.store(table.len(), Ordering::Release);
        started || table.len() != before
    }
}

/// A mute kept elsewhere (a history, another instance of a fleet), with its own times.
struct Kept<'a> {
    dependency: &'a str,
    reason: &'a str,
    actor: Option<&'a str>,
    set_at: chrono::DateTime<chrono::Utc>,
    start: chrono::DateTime<chrono::Utc>,
    until: chrono::DateTime<chrono::Utc>,
}

impl Registry {
    /// Mutes `dependency` over `window`: it is still checked and reported, with its mute, but
    /// sends no notice while the mute is in force. Replaces its previous mute, if any.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] for an unknown dependency; [`Error::is_invalid`] for a window
    /// that ends before it starts, has ended or ends more than 30 days away, a blank or
    /// unprintable reason, an unprintable actor, or a [`MAX_MUTES`]th mute beyond the
    /// bound; [`Error::is_conflict`] for a window that starts later over a mute in force (it
    /// would end that mute now). Nothing changes on error.
    pub fn mute(
        &self,
        dependency: &str,
        window: MuteWindow,
        reason: &str,
        actor: Option<&str>,
    ) -> Result<Mute, Error> {
        let inner = &self.inner;
        let id = self.registered_id(dependency)?;
        let now = inner.clock.now();
        let mute = Mute::new(id, window, reason, actor, now, inner.clock.wall_at(now))?;
        lock(&inner.mutes.touched).insert(mute.dependency.clone());
        {
            let mut table = lock(&inner.mutes.table);
            table.retain(|_, m| !m.is_over(now));
            // A window scheduled later would end a mute in force at once: refused, never
            // replaced silently (the outage the mute was set for would page everyone).
            if let Some(current) = table.get(&mute.dependency) {
                if current.in_force(now) && !mute.in_force(now) {
                    return Err(Error::conflict(format!(
                        "{} is muted until {} ({}): a window that starts later would end that \
                         mute now; unmute it first, or give a window that starts now",
                        mute.dependency,
                        crate::text::iso(current.until),
                        current.reason
                    )));
                }
            }
            if table.len() >= MAX_MUTES && !table.contains_key(&mute.dependency) {
                return Err(Error::invalid(format!(
                    "at most {MAX_MUTES} dependencies may be muted at once"
                )));
            }
            table.insert(mute.dependency.clone(), Arc::new(mute.clone()));
            inner.mutes.count.store(table.len(), Ordering::Release);
        }
        tracing::info!(dependency = %mute.dependency, until = %mute.until, reason = %mute.reason, "dependency muted");
        self.mutes_changed();
        Ok(mute)
    }

    /// Ends the mute of `dependency`, scheduled or in force; answers it, or `None` if there
    /// was none.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] for an unknown dependency.
    pub fn unmute(&self, dependency: &str) -> Result<Option<Mute>, Error> {
        let inner = &self.inner;
        let id = self.registered_id(dependency)?;
        lock(&inner.mutes.touched).insert(id.clone());
        let now = inner.clock.now();
        let removed = {
            let mut table = lock(&inner.mutes.table);
            let removed = table.remove(&id);
            inner.mutes.count.store(table.len(), Ordering::Release);
            removed
        };
        let removed = removed.filter(|m| !m.is_over(now)).map(|m| m.at(now));
        if removed.is_some() {
            tracing::info!(dependency = %id, "dependency unmuted");
            self.mutes_changed();
        }
        Ok(removed)
    }

    /// Puts back a mute kept from an earlier run (by a history), with its own times: set at
    /// `set_at` by `actor`, from `start` until `until`. Skipped (`Ok(None)`) when
    /// `dependency` was muted or unmuted in this run (what an operator did since the start
    /// wins) or the mute has ended.
    ///
    /// # Errors
    ///
    /// As [`mute`](Self::mute) (the window's bounds are counted from now).
    pub fn restore_mute(
        &self,
        dependency: &str,
        reason: &str,
        actor: Option<&str>,
        set_at: chrono::DateTime<chrono::Utc>,
        start: chrono::DateTime<chrono::Utc>,
        until: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<Mute>, Error> {
        let kept = Kept {
            dependency,
            reason,
            actor,
            set_at,
            start,
            until,
        };
        // What an operator did in this run wins.
        self.put_kept(&kept, |_, touched| !touched)
    }

    /// Takes a mute another instance of a fleet set (read from a shared history), with its
    /// own times: the newest set wins, so it replaces this instance's mute of `dependency`
    /// only when that one was set earlier (to the millisecond, as stores keep it). `true`
    /// when it was taken; `false` when it has ended or is not newer. Records nothing (the
    /// instance that set it audited it).
    ///
    /// # Errors
    ///
    /// As [`restore_mute`](Self::restore_mute).
    pub fn share_mute(
        &self,
        dependency: &str,
        reason: &str,
        actor: Option<&str>,
        set_at: chrono::DateTime<chrono::Utc>,
        start: chrono::DateTime<chrono::Utc>,
        until: chrono::DateTime<chrono::Utc>,
    ) -> Result<bool, Error> {
        let kept = Kept {
            dependency,
            reason,
            actor,
            set_at,
            start,
            until,
        };
        let taken = self.put_kept(&kept, |current, _| {
            current.is_none_or(|m| m.set_at.timestamp_millis() < set_at.timestamp_millis())
        })?;
        if let Some(mute) = &taken {
            tracing::info!(dependency = %mute.dependency, until = %mute.until, reason = %mute.reason, "dependency muted by another instance");
        }
        Ok(taken.is_some())
    }

    /// Puts `kept` in the table with its own times when `takes` (told the mute of its
    /// dependency now, and whether it was muted or unmuted in this run) says so; `None` when
    /// it has ended or is not taken.
    fn put_kept(
        &self,
        kept: &Kept<'_>,
        takes: impl FnOnce(Option<&Mute>, bool) -> bool,
    ) -> Result<Option<Mute>, Error> {
        let inner = &self.inner;
        let id = self.registered_id(kept.dependency)?;
        let now = inner.clock.now();
        let wall = inner.clock.wall_at(now);
        if kept.until <= wall {
            return Ok(None);
        }
        let window = MuteWindow::Between {
            start: kept.start,
            end: kept.until,
        };
        let mut mute = Mute::new(id, window, kept.reason, kept.actor, now, wall)?;
        mute.set_at = kept.set_at;
        mute.start = kept.start;
        {
            let touched = lock(&inner.mutes.touched).contains(&mute.dependency);
            let mut table = lock(&inner.mutes.table);
            table.retain(|_, m| !m.is_over(now));
            if !takes(table.get(&mute.dependency).map(|m| &**m), touched) {
                return Ok(None);
            }
            if table.len() >= MAX_MUTES && !table.contains_key(&mute.dependency) {
                return Err(Error::invalid(format!(
                    "at most {MAX_MUTES} dependencies may be muted at once"
                )));
            }
            table.insert(mute.dependency.clone(), Arc::new(mute.clone()));
            inner.mutes.count.store(table.len(), Ordering::Release);
        }
        self.mutes_changed();
        Ok(Some(mute.at(now)))
    }

    /// Ends this instance's mute of `dependency` if it is the one set at `set_at` (to the
    /// millisecond): another instance of a fleet ended it. `true` when it ended one.
    pub fn end_shared_mute(&self, dependency: &str, set_at: chrono::DateTime<chrono::Utc>) -> bool {
        let Ok(id) = self.registered_id(dependency) else {
            return false;
        };
        let inner = &self.inner;
        let ended = {
            let mut table = lock(&inner.mutes.table);
            let same = table
                .get(&id)
                .is_some_and(|m| m.set_at.timestamp_millis() == set_at.timestamp_millis());
            if same {
                table.remove(&id);
                inner.mutes.count.store(table.len(), Ordering::Release);
            }
            same
        };
        if ended {
            tracing::info!(dependency = %id, "dependency unmuted by another instance");
            self.mutes_changed();
        }
        ended
    }

    /// Every mute kept, in force or scheduled, by dependency id.
    #[must_use]
    pub fn mutes(&self) -> Vec<Mute> {
        let inner = &self.inner;
        let now = inner.clock.now();
        lock(&inner.mutes.table)
            .values()
            .filter(|m| !m.is_over(now))
            .map(|m| m.at(now))
            .collect()
    }

    /// The mute of `dependency` in force now, if any.
    #[must_use]
    pub fn muted(&self, dependency: &str) -> Option<Mute> {
        let id = DependencyId::new(dependency).ok()?;
        let inner = &self.inner;
        inner
            .mutes
            .in_force(&id, inner.clock.now())
            .map(Arc::unwrap_or_clone)
    }

    /// The id of the registered dependency `dependency`.
    fn registered_id(&self, dependency: &str) -> Result<DependencyId, Error> {
        self.inner
            .deps
            .get(dependency)
            .map(|entry| entry.info.id.clone())
            .ok_or_else(|| Error::unknown_dependency(dependency))
    }

    /// A report must show the change: rebuild it, and tell the listeners.
    fn mutes_changed(&self) {
        self.inner.deps.touch();
        self.inner.bus.emit(&Event::Mutes);
    }
}

impl super::Inner {
    /// Drops mutes that ended and those of removed dependencies; announces a window that
    /// started or ended since the last sweep.
    pub(crate) fn sweep_mutes(&self) {
        let now = self.clock.now();
        if self.mutes.sweep(now, |id| self.deps.contains(id.as_str())) {
            self.deps.touch();
            self.bus.emit(&Event::Mutes);
        }
    }
}
