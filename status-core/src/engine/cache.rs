//! The report cache: the last system report built, and when it must be built again. A read
//! never waits on a rebuild when a report is already cached: it serves that one.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::sync::{lock, read, write};
use crate::SystemReport;

/// A built report and what it was built from.
pub(crate) struct Cached {
    pub(crate) report: Arc<SystemReport>,
    pub(crate) status_gen: u64,
    pub(crate) check_gen: u64,
    pub(crate) built_at: Instant,
    /// When a result in it ages (turns stale or idle), or an hour on.
    pub(crate) valid_until: Instant,
}

/// What a read asks of the cache.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted {
    pub(crate) now: Instant,
    pub(crate) status_gen: u64,
    pub(crate) check_gen: u64,
    /// A cached report whose checks ran since may be served while younger than this; `None`
    /// wants every check in (as after a refresh).
    pub(crate) max_age: Option<Duration>,
}

impl Cached {
    fn serves(&self, want: Wanted) -> bool {
        self.status_gen == want.status_gen
            && want.now < self.valid_until
            && (self.check_gen == want.check_gen
                || want
                    .max_age
                    .is_some_and(|age| want.now < self.built_at + age))
    }
}

#[derive(Default)]
pub(crate) struct ReportCache {
    cached: RwLock<Option<Cached>>,
    rebuilding: Mutex<()>,
}

impl ReportCache {
    /// The cached report if it serves `want`, else one built by `build`. While another
    /// caller rebuilds, a read that may take an older report (`max_age` set) gets the cached
    /// one at once instead of waiting.
    pub(crate) fn get(&self, want: Wanted, build: impl FnOnce() -> Cached) -> Arc<SystemReport> {
        // The hot path: one read lock and one reference count, nothing else.
        let current = {
            let cached = read(&self.cached);
            match cached.as_ref() {
                Some(c) if c.serves(want) => return Arc::clone(&c.report),
                Some(c) => Some(Arc::clone(&c.report)),
                None => None,
            }
        };
        let _rebuilding = match (self.rebuilding.try_lock(), current) {
            (Ok(guard), _) => guard,
            (Err(std::sync::TryLockError::Poisoned(p)), _) => p.into_inner(),
            (Err(std::sync::TryLockError::WouldBlock), Some(report)) if want.max_age.is_some() => {
                return report;
            }
            (Err(std::sync::TryLockError::WouldBlock), _) => lock(&self.rebuilding),
        };
        if let Some(cached) = read(&self.cached).as_ref().filter(|c| c.serves(want)) {
            return Arc::clone(&cached.report);
        }
        let cached = build();
        let report = Arc::clone(&cached.report);
        *write(&self.cached) = Some(cached);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached(status_gen: u64, now: Instant) -> Cached {
        Cached {
            report: Arc::new(SystemReport::new(
                String::new(),
                String::new(),
                chrono::DateTime::UNIX_EPOCH,
                Vec::new(),
            )),
            status_gen,
            check_gen: 0,
            built_at: now,
            valid_until: now + Duration::from_secs(3600),
        }
    }

    #[test]
    fn rebuilds_only_when_what_it_shows_changed() {
        let cache = ReportCache::default();
        let now = Instant::now();
        let mut want = Wanted {
            now,
            status_gen: 1,
            check_gen: 0,
            max_age: Some(Duration::from_secs(1)),
        };
        let first = cache.get(want, || cached(1, now));
        let again = cache.get(want, || panic!("must not rebuild"));
        assert!(Arc::ptr_eq(&first, &again));
        want.check_gen = 5; // checks ran, nothing changed: served while young
        assert!(Arc::ptr_eq(
            &first,
            &cache.get(want, || panic!("young enough"))
        ));
        want.status_gen = 2;
        let rebuilt = cache.get(want, || cached(2, now));
        assert!(!Arc::ptr_eq(&first, &rebuilt));
    }

    #[test]
    fn a_read_during_a_rebuild_gets_the_cached_report_at_once() {
        let cache = Arc::new(ReportCache::default());
        let now = Instant::now();
        let want = Wanted {
            now,
            status_gen: 1,
            check_gen: 0,
            max_age: Some(Duration::from_secs(1)),
        };
        let first = cache.get(want, || cached(1, now));
        let held = cache.rebuilding.lock().unwrap();
        let newer = Wanted {
            status_gen: 2,
            ..want
        };
        let served = cache.get(newer, || panic!("must not wait for the rebuild"));
        assert!(Arc::ptr_eq(&first, &served));
        drop(held);
    }
}
