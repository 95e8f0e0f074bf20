//! The fleet as this instance knows it: a beat into the store every third of the TTL, the
//! data centers' counts kept in memory, the instances listed on demand.

use crate::Rejection;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::time::Instant;

mod beat;

use self::beat::beat;
use crate::sync::lock;
use crate::sync::{read, write};
use crate::{
    Answer, FleetSource, FleetStats, FleetStore, FleetTracker, FleetView, HealthRule, InstancePage,
    InstanceQuery, Member, Note, Published, BEAT_BUCKETS, REJECTIONS,
};
use crate::{FailingDependency, OwnFailure};
use status_core::{CheckStatus, Dependency, Error, Registry, Reporter, Urgency};

#[derive(Debug, Default)]
struct Stats {
    beats: AtomicU64,
    buckets: [AtomicU64; BEAT_BUCKETS.len() + 1],
    micros: AtomicU64,
    failures: AtomicU64,
    rejected: [AtomicU64; REJECTIONS.len()],
}

impl Stats {
    fn beat(&self, took: Duration) {
        self.beats.fetch_add(1, Ordering::Relaxed);
        let at = BEAT_BUCKETS
            .iter()
            .position(|le| took.as_secs_f64() <= *le)
            .unwrap_or(BEAT_BUCKETS.len());
        self.buckets[at].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.micros.fetch_add(micros, Ordering::Relaxed);
    }

    fn reject(&self, reason: Rejection, n: u64) {
        self.rejected[reason.index()].fetch_add(n, Ordering::Relaxed);
    }
}

/// The fleet as this instance knows it: a beat every third of the TTL by a background task,
/// each data center's counts served from memory (what this instance keeps grows with the
/// number of data centers, not of instances), and the instances listed from the store when
/// asked, a page at a time, each page kept for a third of the TTL.
///
/// Safe whatever the store does:
/// - **lost or slow** (a beat may take a third of the TTL; a late one's connection is
///   dropped, never reused): the last view is kept, marked stale, for three TTLs; then every
///   data center answers healthy with `failOpen`. A stale view counts for nothing in
///   fleet-aware readiness ([`FleetView::shared`]).
/// - **unreachable from the start**: this instance's own data center is judged on its own
///   summary until the store answers, then fails open with the rest after three TTLs.
/// - **full of garbage**: the store heals what it can and refuses what it must; each is
///   counted ([`FleetStats`]) and logged, and the store is a passive dependency, `fleet`
///   (urgency None): OK while beats succeed, OUTAGE while they fail, MAJOR while refused.
///
/// The instance's own probes never wait on any of it.
#[derive(Debug, Clone)]
pub struct Fleet {
    tracker: Arc<RwLock<FleetTracker>>,
    /// Woken each time the tracker takes the store's answer or counts: a new view.
    viewed: Arc<tokio::sync::Notify>,
    ttl: Duration,
    store: Arc<dyn FleetStore>,
    stats: Arc<Stats>,
    pages: Arc<Mutex<Pages>>,
}

/// Pages of instances by (data center, cursor, limit, worst first), with when they were
/// asked of the store.
type Pages = HashMap<(Option<String>, Option<String>, usize, bool), (Instant, InstancePage)>;

/// The most pages kept at once.
const PAGES_KEPT: usize = 32;

/// `page` as it is `since` after the store was asked: each age that much older, stale past
/// `ttl`. (Found by scripts/partition: a page read slowly under packet loss, then kept, said
/// a record 1.1 s old and fresh when it was over two seconds old, past the TTL.)
fn aged(page: &InstancePage, since: Duration, ttl: Duration) -> InstancePage {
    let mut page = page.clone();
    let since = u64::try_from(since.as_millis()).unwrap_or(u64::MAX);
    let ttl = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    for instance in &mut page.instances {
        instance.age_ms = instance.age_ms.saturating_add(since);
        instance.stale |= instance.age_ms >= ttl;
    }
    page
}

impl Fleet {
    /// Starts beating `registry`'s summary as `member` into `store`, every third of the TTL,
    /// on the current Tokio runtime, until the registry is dropped; registers the passive
    /// dependency `fleet` unless the registry has one.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[must_use]
    pub fn start(
        registry: &Registry,
        store: impl FleetStore,
        member: Member,
        rule: HealthRule,
    ) -> Self {
        let ttl = store.ttl();
        let tracker = FleetTracker::new(
            member,
            rule,
            ttl,
            Instant::now().into_std(),
            registry.condition(),
        );
        let fleet = Self {
            tracker: Arc::new(RwLock::new(tracker)),
            viewed: Arc::default(),
            ttl,
            store: Arc::new(store),
            stats: Arc::default(),
            pages: Arc::default(),
        };
        let reporter = match registry.add_passive(
            Dependency::passive("fleet")
                .urgency(Urgency::None)
                .kind("fleet")
                .description("The fleet's store: this instance's beat and its data centers' counts")
                .build_info()
                .expect("a valid dependency"),
        ) {
            Ok(reporter) => Some(reporter),
            Err(e) => {
                tracing::warn!("the fleet store is not reported as a dependency: {e}");
                None
            }
        };
        tokio::spawn(beat(
            fleet.clone(),
            registry.downgrade(),
            registry.subscribe(),
            reporter,
        ));
        fleet
    }

    /// The fleet now, from memory: fresh, stale (the store not read for a TTL), or failing
    /// open (not read for three TTLs). The same `Arc` until the next read of the store, so
    /// that renderings can be cached by it.
    #[must_use]
    pub fn view(&self) -> Arc<FleetView> {
        read(&self.tracker).view(Instant::now().into_std())
    }

    /// Resolves once the fleet's view may have changed (the store answered a beat, or its
    /// counts moved): what waits for the fleet to say something waits on this, not a timer.
    /// Take the future before reading the view, so that no change falls in between.
    pub fn view_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.viewed.notified()
    }

    /// A page of instances from the store, kept for a third of the TTL; each instance's age
    /// counted to now (from when the store was asked), stale past the TTL.
    ///
    /// # Errors
    ///
    /// The store unreachable, or a cursor it did not hand out.
    pub async fn instances(&self, query: InstanceQuery) -> Result<InstancePage, Error> {
        let key = (
            query.datacenter.clone(),
            query.cursor.clone(),
            query.limit,
            query.worst_first,
        );
        if let Some((at, page)) = self.lock_pages().get(&key) {
            if at.elapsed() < self.ttl / 3 {
                return Ok(aged(page, at.elapsed(), self.ttl));
            }
        }
        let asked = Instant::now();
        let page = tokio::time::timeout(self.ttl, self.store.instances(&query))
            .await
            .map_err(|_| Error::unavailable("the fleet store did not answer in time"))??;
        let mut pages = self.lock_pages();
        if pages.len() >= PAGES_KEPT {
            pages.retain(|_, (at, _)| at.elapsed() < self.ttl / 3);
            if pages.len() >= PAGES_KEPT {
                pages.clear();
            }
        }
        pages.insert(key, (asked, page.clone()));
        drop(pages);
        Ok(aged(&page, asked.elapsed(), self.ttl))
    }

    /// A failure of this instance's own that most of its data center shares, said with the
    /// counts, among `dependencies` (those its traffic depends on; any failing dependency
    /// when empty): for status-traffic's `Culler::shared`, so that a shared
    /// outage culls no one. See [`FleetView::own_shared_failure`].
    #[must_use]
    pub fn shared_failure(&self, dependencies: &[String]) -> Option<String> {
        self.view().own_shared_failure(dependencies)
    }

    /// This instance in the fleet.
    #[must_use]
    pub fn member(&self) -> Member {
        read(&self.tracker).member().clone()
    }

    /// The store held a voice lease no instance could have written, for `dependency` in
    /// `datacenter`: taken as free, counted (`forged_lease`) and said.
    #[cfg(feature = "notify")]
    pub(crate) fn forged_lease(&self, datacenter: &str, dependency: &status_core::DependencyId) {
        self.stats.reject(Rejection::ForgedLease, 1);
        tracing::warn!(
            datacenter,
            dependency = %dependency,
            "the fleet store held a voice lease no instance could have written: taken as free"
        );
    }

    /// The store it beats into.
    #[must_use]
    pub fn store(&self) -> &Arc<dyn FleetStore> {
        &self.store
    }

    /// The store's TTL.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// What the beats amounted to.
    #[must_use]
    pub fn stats(&self) -> FleetStats {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FleetStats {
            beats: load(&self.stats.beats),
            buckets: std::array::from_fn(|i| load(&self.stats.buckets[i])),
            seconds: load(&self.stats.micros) as f64 / 1e6,
            failures: load(&self.stats.failures),
            rejected: std::array::from_fn(|i| load(&self.stats.rejected[i])),
        }
    }

    fn lock_pages(&self) -> std::sync::MutexGuard<'_, Pages> {
        lock(&self.pages)
    }
}

impl FleetSource for Fleet {
    fn view(&self) -> Arc<FleetView> {
        Fleet::view(self)
    }

    fn instances(&self, query: InstanceQuery) -> crate::Boxed<'_, Result<InstancePage, Error>> {
        Box::pin(Fleet::instances(self, query))
    }

    fn stats(&self) -> Option<FleetStats> {
        Some(Fleet::stats(self))
    }

    fn look(&self) {
        self.store.look();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;
    use crate::{Beat, BeatError, Boxed, InstanceSummary, Member};
    use status_core::check::CheckOutcome;
    use status_core::CheckStatus;

    /// A store that answers every beat at once and keeps what it was told (a spy).
    #[derive(Debug, Default)]
    struct Told {
        beats: AtomicUsize,
        last: Mutex<Option<CheckStatus>>,
    }

    impl FleetStore for Arc<Told> {
        fn ttl(&self) -> Duration {
            Duration::from_secs(3)
        }

        fn beat<'a>(&'a self, me: &'a InstanceSummary) -> Boxed<'a, Result<Beat, BeatError>> {
            self.beats.fetch_add(1, Ordering::SeqCst);
            *self.last.lock().unwrap() = Some(me.condition);
            Box::pin(std::future::ready(Ok(Beat::kept(
                0,
                Vec::new(),
                [0; REJECTIONS.len()],
            ))))
        }

        fn instances<'a>(&'a self, _: &'a InstanceQuery) -> Boxed<'a, Result<InstancePage, Error>> {
            Box::pin(std::future::ready(Ok(InstancePage::default())))
        }

        fn reset(&self) -> Boxed<'_, ()> {
            Box::pin(std::future::ready(()))
        }

        fn describe(&self) -> String {
            "told".to_owned()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_change_is_published_at_once_and_a_flapping_one_at_most_every_thirtieth_of_the_ttl() {
        let registry = Registry::new();
        let (reporter, told) = (
            registry
                .add_passive(
                    Dependency::passive("db")
                        .urgency(Urgency::Required)
                        .failures_before_outage(1)
                        .successes_before_recovery(1)
                        .build_info()
                        .unwrap(),
                )
                .unwrap(),
            Arc::new(Told::default()),
        );
        reporter.record(CheckOutcome::new(CheckStatus::Ok, "up"));
        let member = Member {
            instance_id: "a".into(),
            datacenter: "east".into(),
            version: "1".into(),
            url: String::new(),
        };
        let _fleet = Fleet::start(&registry, Arc::clone(&told), member, HealthRule::default());
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(
            told.beats.load(Ordering::SeqCst),
            1,
            "the first beat at once"
        );

        // A change: published within a thirtieth of the TTL of the last beat (100 ms), not at
        // the next beat a second later.
        reporter.record(CheckOutcome::new(CheckStatus::Outage, "down"));
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(registry.condition(), CheckStatus::Outage);
        assert_eq!(told.beats.load(Ordering::SeqCst), 1, "not before 100 ms");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(*told.last.lock().unwrap(), Some(CheckStatus::Outage));
        assert_eq!(told.beats.load(Ordering::SeqCst), 2);

        // Flapping for 900 ms, a change every 10 ms: at most one beat every 100 ms.
        let before = told.beats.load(Ordering::SeqCst);
        for i in 0..90 {
            let status = if i % 2 == 0 {
                CheckStatus::Ok
            } else {
                CheckStatus::Outage
            };
            reporter.record(CheckOutcome::new(status, "flapping"));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let during = told.beats.load(Ordering::SeqCst) - before;
        assert!(
            (5..=10).contains(&during),
            "{during} beats in 900 ms of flapping"
        );
    }

    #[test]
    fn a_kept_page_ages_and_goes_stale_past_the_ttl() {
        let summary = InstanceSummary::new("a", "dc", CheckStatus::Ok, Vec::new(), "1");
        let page = crate::InstancePage {
            instances: vec![crate::InstanceView {
                summary,
                age_ms: 1_100,
                stale: false,
            }],
            next_cursor: None,
        };
        let ttl = Duration::from_millis(1_500);
        let soon = aged(&page, Duration::from_millis(100), ttl);
        assert_eq!(
            (soon.instances[0].age_ms, soon.instances[0].stale),
            (1_200, false)
        );
        let late = aged(&page, Duration::from_millis(1_000), ttl);
        assert_eq!(
            (late.instances[0].age_ms, late.instances[0].stale),
            (2_100, true)
        );
    }
}
