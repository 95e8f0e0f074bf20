//! The fleet: every data center's instances, counted by condition, and the rule GSLB asks by.
//!
//! Pure: the model is told what the store counted, or the instances' last summaries, and the
//! time. Each instance publishes its own ([`InstanceSummary`]) through a store (with the
//! `redis` feature, [`RedisFleet`], at a constant cost per instance) and reads back each data
//! center's counts ([`DatacenterCounts`]), never the other instances' summaries;
//! [`FleetView::from_counts`] folds them ([`FleetView::new`] folds summaries, for tests and
//! small fleets). The instances themselves are listed on demand, a page at a time
//! ([`InstanceQuery`], [`InstancePage`]).
//!
//! - an instance is **fresh** while its last heartbeat is younger than the store's TTL, and
//!   **stale** after (its last summary is kept, marked, and does not count);
//! - a data center is **healthy** when at least [`HealthRule::healthy_share`] (default 50 %)
//!   of its fresh instances are in rotation and not OUTAGE; with no fresh instance, it is not;
//! - when **every** data center is unhealthy, every one answers healthy with `failOpen`:
//!   some work beats none (Indeed's "failing open").

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "etcd")]
mod etcd;
mod excuse;
#[cfg(feature = "redis")]
mod redis;
mod run;
mod sync;
mod tracker;

#[cfg(feature = "etcd")]
pub use self::etcd::{EtcdFleet, FLEET_MARK};
pub use self::excuse::FleetExcuse;
#[cfg(feature = "redis")]
pub use self::redis::{RedisFleet, DEFAULT_MAX_DATACENTERS};
pub use self::run::{Fleet, Member};
pub use self::tracker::{Answer, FleetTracker, Note, Published, Told};

impl FleetSource for Fleet {
    fn view(&self) -> Arc<FleetView> {
        Fleet::view(self)
    }

    fn instances(
        &self,
        query: InstanceQuery,
    ) -> Pin<Box<dyn Future<Output = Result<InstancePage, Error>> + Send + '_>> {
        Box::pin(Fleet::instances(self, query))
    }

    fn stats(&self) -> Option<FleetStats> {
        Some(Fleet::stats(self))
    }
}

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use status_core::{CheckStatus, Error, Readiness};

/// Where a fleet's views and instances come from: a running [`Fleet`], or a
/// closure that hands out views (its instances then listed from the view itself, for tests
/// and fixed fleets).
pub trait FleetSource: Send + Sync + 'static {
    /// The fleet now, from memory.
    fn view(&self) -> Arc<FleetView>;

    /// A page of instances.
    ///
    /// # Errors
    ///
    /// The store unreachable, or a cursor it did not hand out ([`Error::is_invalid`]).
    fn instances(
        &self,
        query: InstanceQuery,
    ) -> Pin<Box<dyn Future<Output = Result<InstancePage, Error>> + Send + '_>>;

    /// What the beats into the store amounted to, when there is a store.
    fn stats(&self) -> Option<FleetStats> {
        None
    }
}

/// What one beat found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    /// The server's time, in ms since the epoch.
    pub now_ms: u64,
    /// Keys of the wrong type the beat deleted.
    pub healed: u64,
    /// Instances it retired.
    pub retired: u64,
    /// When the counts were made (ms since the epoch, the server's clock): the first beat
    /// of each upkeep period counts for every beat of the fleet.
    pub counted_ms: u64,
    /// Every data center's fresh and serving instances.
    pub datacenters: Vec<DatacenterCounts>,
    /// Whether the store is settling: found empty (a restart, a flush) or healed less than a
    /// TTL ago, its counts hold only the instances that beat since. Not a view of the fleet.
    pub settling: bool,
    /// Entries the store skipped since the last beat because no instance could have written
    /// them, by reason ([`REJECTIONS`]): garbage under the fleet's prefix, counted, never
    /// counted as instances.
    pub skipped: [u64; REJECTIONS.len()],
}

impl Beat {
    /// A beat answered by a store that keeps its counts as they change (no upkeep, nothing
    /// healed, retired or settling), at `now_ms`.
    #[must_use]
    pub fn kept(
        now_ms: u64,
        datacenters: Vec<DatacenterCounts>,
        skipped: [u64; REJECTIONS.len()],
    ) -> Self {
        Self {
            now_ms,
            healed: 0,
            retired: 0,
            counted_ms: now_ms,
            datacenters,
            settling: false,
            skipped,
        }
    }
}

/// Why a beat was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeatError {
    /// The store refused what was sent: `bad_id`, `bad_datacenter`, `bad_state`, `too_large`,
    /// `too_many_datacenters`.
    Rejected(&'static str),
    /// Another process holds this instance's id and beats under it: this one is not counted
    /// until the other stops (its record then goes stale within a TTL).
    IdTaken {
        /// The data center the holder beats in, as far as the store says.
        datacenter: String,
    },
    /// The store could not be reached, or answered what this client cannot read.
    Store(String),
}

impl std::fmt::Display for BeatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rejected(reason) => write!(f, "the store refused the beat: {reason}"),
            Self::IdTaken { datacenter } => write!(
                f,
                "another process beats under this instance id (in data center {datacenter:?}): \
                 this instance is not counted; give each instance an id of its own"
            ),
            Self::Store(e) => write!(f, "the store failed: {e}"),
        }
    }
}

/// A random token for this process's store client: who holds an instance id.
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn owner_token() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(std::process::id());
    let b = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{a:016x}{b:016x}")
}

impl std::error::Error for BeatError {}

/// A boxed future, as the store's methods return them.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a [`Fleet`] keeps its instances: Redis ([`RedisFleet`], feature `redis`), etcd
/// ([`EtcdFleet`], feature `etcd`), or a store of your own. [`Fleet`], the data-center
/// verdicts and the HTTP routes know no store by name.
///
/// The contract, whatever the store:
/// - [`beat`](Self::beat) publishes this instance's summary and answers every data center's
///   fresh instances by condition, at a cost per instance that does not grow with the fleet;
///   it is called every third of the [`ttl`](Self::ttl), under a timeout of a third of it;
/// - an instance not heard of for a TTL is not counted;
/// - what the store holds is not trusted: what no instance could have written is skipped and
///   counted ([`Beat::skipped`]), never counted as an instance;
/// - a beat that fails says so ([`BeatError`]): the fleet's view then goes stale, then fails
///   open, by [`Fleet`]'s rules, not the store's;
/// - a store that learns of changes between beats (etcd's watch) says so
///   ([`subscribe`](Self::subscribe), [`counts`](Self::counts)), and the view follows at once.
pub trait FleetStore: Send + Sync + std::fmt::Debug + 'static {
    /// How long an instance stays fresh after its last heartbeat.
    fn ttl(&self) -> Duration;

    /// One beat of `me`: publishes it (when it changed, or as the store needs) and answers
    /// every data center's counts.
    ///
    /// # Errors
    ///
    /// [`BeatError::Rejected`] for a summary the store refuses; [`BeatError::Store`] when the
    /// store cannot be reached, is not caught up, or answers garbage.
    fn beat<'a>(&'a self, me: &'a InstanceSummary) -> Boxed<'a, Result<Beat, BeatError>>;

    /// A page of instances.
    ///
    /// # Errors
    ///
    /// The store unreachable, or a cursor it did not hand out ([`Error::is_invalid`]).
    fn instances<'a>(&'a self, query: &'a InstanceQuery) -> Boxed<'a, Result<InstancePage, Error>>;

    /// Drops what a call that failed or timed out may have left half-read (a connection, a
    /// stream): the next call starts afresh.
    fn reset(&self) -> Boxed<'_, ()>;

    /// Where the store is, without credentials.
    fn describe(&self) -> String;

    /// Told each time the counts the store keeps may have changed (a watch's event), so that
    /// [`Fleet`] takes them at once, between its beats; `None` (the default) for a store whose
    /// counts come only with a beat (Redis).
    fn subscribe(&self) -> Option<tokio::sync::watch::Receiver<()>> {
        None
    }

    /// The counts the store keeps now, without a round trip, when it can vouch for them (its
    /// watch caught up); `None` otherwise, and by default.
    fn counts(&self) -> Option<Vec<DatacenterCounts>> {
        None
    }
}

/// A store's cursor: bytes (a key, a member) in hex.
#[cfg(any(feature = "redis", feature = "etcd"))]
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// A cursor's bytes; `None` for what no store handed out (odd, not hex, over 512 bytes).
#[cfg(any(feature = "redis", feature = "etcd"))]
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 2 * 512 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The most bytes of one instance's summary, in any store.
pub const MAX_SUMMARY: usize = 4096;
/// The most instances one page lists, in any store.
pub const MAX_PAGE: usize = 500;

/// The upper bounds of the beat-duration histogram, in seconds.
pub const BEAT_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];
/// Why the store refused or healed something, as counted.
pub const REJECTIONS: [&str; 7] = [
    "wrong_type",
    "too_large",
    "bad_id",
    "bad_datacenter",
    "bad_state",
    "id_taken",
    "too_many_datacenters",
];

/// What the fleet's beats amounted to, for metrics: `status_fleet_exchange_seconds` and
/// `status_fleet_rejected_total{reason}`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FleetStats {
    /// Beats answered, and their durations: a count per bucket of [`BEAT_BUCKETS`] (not
    /// cumulative), and the sum in seconds.
    pub beats: u64,
    /// How many fell in each bucket (the last: over a second).
    pub buckets: [u64; BEAT_BUCKETS.len() + 1],
    /// The durations' sum, in seconds.
    pub seconds: f64,
    /// Beats that failed: the store unreachable, slow or answering garbage.
    pub failures: u64,
    /// By reason ([`REJECTIONS`]): what the store refused, and keys of the wrong type it
    /// deleted.
    pub rejected: [u64; REJECTIONS.len()],
}

impl<F> FleetSource for F
where
    F: Fn() -> Arc<FleetView> + Send + Sync + 'static,
{
    fn view(&self) -> Arc<FleetView> {
        self()
    }

    /// Pages through the view's own instances (none in a view folded from counts), by data
    /// center and id; the cursor is an offset.
    fn instances(
        &self,
        query: InstanceQuery,
    ) -> Pin<Box<dyn Future<Output = Result<InstancePage, Error>> + Send + '_>> {
        let view = self();
        Box::pin(async move { view.page(&query) })
    }
}

/// What an instance publishes of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InstanceSummary {
    /// The instance's name, unique in the fleet.
    pub instance_id: String,
    /// Its data center.
    pub datacenter: String,
    /// Its system condition.
    pub condition: CheckStatus,
    /// The sources of the rotation holds in force (`operator`, `shutdown`, `cull`).
    pub holds: Vec<String>,
    /// Its version.
    pub version: String,
    /// Where its dashboard is, if it says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

impl InstanceSummary {
    /// A summary.
    #[must_use]
    pub fn new(
        instance_id: impl Into<String>,
        datacenter: impl Into<String>,
        condition: CheckStatus,
        holds: Vec<String>,
        version: impl Into<String>,
    ) -> Self {
        Self {
            instance_id: instance_id.into(),
            datacenter: datacenter.into(),
            condition,
            holds,
            version: version.into(),
            url: String::new(),
        }
    }

    /// Whether it counts for its data center: in rotation and not OUTAGE.
    #[must_use]
    pub fn serving(&self) -> bool {
        self.holds.is_empty() && self.condition != CheckStatus::Outage
    }
}

/// When a data center is healthy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HealthRule {
    /// The share of a data center's fresh instances that must be serving.
    pub healthy_share: f64,
}

impl Default for HealthRule {
    fn default() -> Self {
        Self { healthy_share: 0.5 }
    }
}

/// A data center's fresh instances, by condition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub struct Conditions {
    /// OK.
    pub ok: usize,
    /// MINOR.
    pub minor: usize,
    /// MAJOR.
    pub major: usize,
    /// OUTAGE.
    pub outage: usize,
}

impl Conditions {
    /// Every fresh instance.
    #[must_use]
    pub fn total(&self) -> usize {
        self.ok + self.minor + self.major + self.outage
    }

    /// The fresh instances no better than `condition`.
    #[must_use]
    pub fn no_better_than(&self, condition: CheckStatus) -> usize {
        match condition {
            CheckStatus::Ok => self.total(),
            CheckStatus::Minor => self.minor + self.major + self.outage,
            CheckStatus::Major => self.major + self.outage,
            CheckStatus::Outage => self.outage,
        }
    }

    /// One more instance of `condition`.
    pub fn add(&mut self, condition: CheckStatus) {
        match condition {
            CheckStatus::Ok => self.ok += 1,
            CheckStatus::Minor => self.minor += 1,
            CheckStatus::Major => self.major += 1,
            CheckStatus::Outage => self.outage += 1,
        }
    }
}

/// What the store counted of one data center: its fresh instances by condition, and those of
/// them serving (in rotation and not OUTAGE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatacenterCounts {
    /// Its name.
    pub datacenter: String,
    /// Its fresh instances, by condition.
    pub conditions: Conditions,
    /// Of them, those serving.
    pub serving: usize,
}

/// Which instances to list: of one data center or all, after a cursor, at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceQuery {
    /// Only this data center's.
    pub datacenter: Option<String>,
    /// After this cursor (a previous page's [`InstancePage::next_cursor`]).
    pub cursor: Option<String>,
    /// At most this many (the store caps it; 500 for Redis).
    pub limit: usize,
}

impl InstanceQuery {
    /// Whether it asks for the instances of `datacenter` (it names none, or that one).
    #[must_use]
    pub fn wants(&self, datacenter: &str) -> bool {
        self.datacenter
            .as_deref()
            .is_none_or(|name| name == datacenter)
    }
}

/// A page of instances, and the cursor of the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstancePage {
    /// The instances, fresh and stale, by data center.
    pub instances: Vec<InstanceView>,
    /// Where the next page starts; `None` on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One instance as the fleet sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InstanceView {
    /// Its last summary.
    #[serde(flatten)]
    pub summary: InstanceSummary,
    /// How long ago it was published, in milliseconds.
    pub age_ms: u64,
    /// Whether it is older than the TTL.
    pub stale: bool,
}

/// One data center.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DatacenterView {
    /// `OK` when healthy (or failing open), `OUTAGE` when not: the field a balancer reads
    /// first, as in the instance's summary.
    pub condition: CheckStatus,
    /// Its name.
    pub datacenter: String,
    /// Whether it is healthy by the rule.
    pub healthy: bool,
    /// Whether every data center is unhealthy, so this one answers healthy anyway.
    pub fail_open: bool,
    /// Whether the fleet view is older than it should be (the store is unreachable).
    pub stale: bool,
    /// Fresh instances serving.
    pub serving: usize,
    /// Fresh instances.
    pub fresh: usize,
    /// Fresh instances, by condition.
    pub conditions: Conditions,
    /// Its instances, fresh and stale, when the view was folded from summaries; empty in a
    /// view folded from counts (list them with the store, a page at a time).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceView>,
}

impl DatacenterView {
    /// A data center judged by `rule` on its fresh instances' conditions and its serving
    /// ones; not failing open (the fleet decides that).
    fn judged(
        datacenter: String,
        conditions: Conditions,
        serving: usize,
        rule: HealthRule,
    ) -> Self {
        let fresh = conditions.total();
        let healthy = fresh > 0 && serving as f64 >= rule.healthy_share * fresh as f64;
        Self {
            condition: CheckStatus::Ok,
            datacenter,
            healthy,
            fail_open: false,
            stale: false,
            serving,
            fresh,
            conditions,
            instances: Vec::new(),
        }
    }

    /// Whether GSLB should send it traffic: healthy, or every data center failing.
    #[must_use]
    pub fn answers_healthy(&self) -> bool {
        self.healthy || self.fail_open
    }
}

/// The fleet at one moment.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FleetView {
    /// Whether every data center is unhealthy (each then answers healthy).
    pub fail_open: bool,
    /// Whether this view is older than it should be: the store could not be read lately.
    pub stale: bool,
    /// The data centers, by name.
    pub datacenters: Vec<DatacenterView>,
    /// This instance's own entry as counted (its data center and published condition), so
    /// that rules about "the others" can leave it out.
    #[serde(skip)]
    pub own: Option<(String, CheckStatus)>,
}

impl FleetView {
    /// Folds `summaries` (each with its age) by `rule`, an instance counting as fresh while
    /// younger than `ttl`.
    #[must_use]
    pub fn new(
        summaries: Vec<(InstanceSummary, Duration)>,
        ttl: Duration,
        rule: HealthRule,
    ) -> Self {
        let mut by_dc: BTreeMap<String, Vec<InstanceView>> = BTreeMap::new();
        for (summary, age) in summaries {
            by_dc
                .entry(summary.datacenter.clone())
                .or_default()
                .push(InstanceView {
                    summary,
                    age_ms: u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
                    stale: age >= ttl,
                });
        }
        let datacenters = by_dc
            .into_iter()
            .map(|(datacenter, mut instances)| {
                instances.sort_by(|a, b| a.summary.instance_id.cmp(&b.summary.instance_id));
                let mut conditions = Conditions::default();
                let mut serving = 0;
                for i in instances.iter().filter(|i| !i.stale) {
                    conditions.add(i.summary.condition);
                    serving += usize::from(i.summary.serving());
                }
                let mut dc = DatacenterView::judged(datacenter, conditions, serving, rule);
                dc.instances = instances;
                dc
            })
            .collect();
        Self::folded(datacenters)
    }

    /// Folds what the store counted of each data center by `rule`.
    #[must_use]
    pub fn from_counts(counts: Vec<DatacenterCounts>, rule: HealthRule) -> Self {
        let mut datacenters: Vec<DatacenterView> = counts
            .into_iter()
            .map(|c| DatacenterView::judged(c.datacenter, c.conditions, c.serving, rule))
            .collect();
        datacenters.sort_by(|a, b| a.datacenter.cmp(&b.datacenter));
        Self::folded(datacenters)
    }

    /// The fleet of judged data centers: failing open when every one is unhealthy.
    fn folded(mut datacenters: Vec<DatacenterView>) -> Self {
        let fail_open = !datacenters.is_empty() && datacenters.iter().all(|d| !d.healthy);
        for dc in &mut datacenters {
            dc.fail_open = fail_open;
            dc.condition = if dc.answers_healthy() {
                CheckStatus::Ok
            } else {
                CheckStatus::Outage
            };
        }
        Self {
            fail_open,
            stale: false,
            datacenters,
            own: None,
        }
    }

    /// Fleet-aware readiness: whether a failure of `condition` of instance `me` in
    /// `datacenter` is its data center's rather than its own, that is, whether more than half
    /// of the other fresh instances there are no better. A stale view is no information: it
    /// never says so. Answers how many of how many others fail, when it is shared.
    #[must_use]
    pub fn shared_failure(
        &self,
        datacenter: &str,
        me: &str,
        condition: CheckStatus,
    ) -> Option<(usize, usize)> {
        if self.stale {
            return None;
        }
        let dc = self.datacenter(datacenter)?;
        let (failing, others) = if dc.instances.is_empty() {
            // From the counts, less this instance's own entry if it is counted here.
            let (mut failing, mut others) = (dc.conditions.no_better_than(condition), dc.fresh);
            if let Some((own_dc, own)) = &self.own {
                if own_dc == datacenter && others > 0 {
                    others -= 1;
                    if *own >= condition {
                        failing = failing.saturating_sub(1);
                    }
                }
            }
            (failing, others)
        } else {
            let others: Vec<_> = dc
                .instances
                .iter()
                .filter(|i| !i.stale && i.summary.instance_id != me)
                .collect();
            let failing = others
                .iter()
                .filter(|i| i.summary.condition >= condition)
                .count();
            (failing, others.len())
        };
        (others > 0 && failing * 2 > others).then_some((failing, others))
    }

    /// Fleet-aware readiness: `own`, the readiness of instance `me` of `datacenter`, judged
    /// again by the fleet. A failure on the condition alone (startup done, no hold) that more
    /// than half of the other fresh instances there share (see
    /// [`shared_failure`](Self::shared_failure)) is the data center's: the instance stays
    /// ready, and whether the data center gets traffic is left to its endpoint (and GSLB).
    /// Anything else, a stale view included, is the instance's own rule's answer. The result
    /// says which rule answered ([`Readiness::rule`]).
    #[must_use]
    pub fn readiness(&self, datacenter: &str, me: &str, own: Readiness) -> Readiness {
        if !own.fails_on_condition_alone() {
            return own.by_instance();
        }
        match self.shared_failure(datacenter, me, own.condition()) {
            None => own.by_instance(),
            Some((failing, others)) => {
                let why = format!(
                    "{} is shared by {failing} of the {others} other instances of {datacenter}: \
                     left to the data-center endpoint",
                    own.condition()
                );
                own.by_fleet(why)
            }
        }
    }

    /// A page of the instances this view holds (those it was folded from), by data center
    /// and id; the cursor is an offset into them.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a cursor that is not an offset.
    pub fn page(&self, query: &InstanceQuery) -> Result<InstancePage, Error> {
        let from = match &query.cursor {
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| Error::invalid("invalid cursor"))?,
            None => 0,
        };
        let limit = query.limit.max(1);
        let mut all = self
            .datacenters
            .iter()
            .filter(|dc| query.wants(&dc.datacenter))
            .flat_map(|dc| dc.instances.iter())
            .skip(from);
        let instances: Vec<InstanceView> = all.by_ref().take(limit).cloned().collect();
        let next_cursor = all.next().is_some().then(|| (from + limit).to_string());
        Ok(InstancePage {
            instances,
            next_cursor,
        })
    }

    /// The data center named `name`.
    #[must_use]
    pub fn datacenter(&self, name: &str) -> Option<&DatacenterView> {
        self.datacenters.iter().find(|d| d.datacenter == name)
    }

    /// This view marked stale: the store could not be read since it was made.
    #[must_use]
    pub fn into_stale(mut self) -> Self {
        self.stale = true;
        for dc in &mut self.datacenters {
            dc.stale = true;
        }
        self
    }

    /// The same view, failing open: every data center answers healthy (`failOpen`), as when
    /// the store has not been read for so long that no verdict of it can be trusted.
    #[must_use]
    pub fn into_failed_open(mut self) -> Self {
        self.fail_open = true;
        for dc in &mut self.datacenters {
            dc.fail_open = true;
            dc.condition = CheckStatus::Ok;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(3);

    fn instance(id: &str, dc: &str, condition: CheckStatus, held: bool) -> InstanceSummary {
        let holds = if held {
            vec!["operator".to_owned()]
        } else {
            Vec::new()
        };
        InstanceSummary::new(id, dc, condition, holds, "1.0")
    }

    fn view(instances: &[(InstanceSummary, u64)]) -> FleetView {
        FleetView::new(
            instances
                .iter()
                .map(|(s, age)| (s.clone(), Duration::from_secs(*age)))
                .collect(),
            TTL,
            HealthRule::default(),
        )
    }

    #[test]
    fn a_datacenter_is_healthy_while_half_its_fresh_instances_serve() {
        let fleet = view(&[
            (instance("a1", "east", CheckStatus::Ok, false), 0),
            (instance("a2", "east", CheckStatus::Outage, false), 0),
            (instance("b1", "west", CheckStatus::Major, true), 0),
            (instance("b2", "west", CheckStatus::Outage, false), 1),
            (instance("b3", "west", CheckStatus::Ok, false), 9), // stale: does not count
        ]);
        let east = fleet.datacenter("east").unwrap();
        assert!(east.healthy && !east.fail_open);
        assert_eq!(
            (east.serving, east.fresh, east.condition),
            (1, 2, CheckStatus::Ok)
        );
        let west = fleet.datacenter("west").unwrap();
        assert!(!west.healthy && !west.answers_healthy());
        assert_eq!((west.serving, west.fresh), (0, 2));
        assert_eq!(west.condition, CheckStatus::Outage);
        assert!(west
            .instances
            .iter()
            .any(|i| i.stale && i.summary.instance_id == "b3"));
        assert!(fleet.datacenter("north").is_none());
    }

    #[test]
    fn when_every_datacenter_is_unhealthy_every_one_fails_open() {
        let fleet = view(&[
            (instance("a1", "east", CheckStatus::Outage, false), 0),
            (instance("b1", "west", CheckStatus::Ok, true), 0),
        ]);
        assert!(fleet.fail_open);
        for dc in &fleet.datacenters {
            assert!(!dc.healthy && dc.fail_open && dc.answers_healthy());
            assert_eq!(dc.condition, CheckStatus::Ok);
        }
        // Only stale instances: unhealthy too.
        let fleet = view(&[(instance("a1", "east", CheckStatus::Ok, false), 5)]);
        assert!(fleet.fail_open);
    }

    #[test]
    fn a_shared_failure_is_judged_from_counts_less_this_instance_and_never_when_stale() {
        let counts = |outage: usize| DatacenterCounts {
            datacenter: "east".into(),
            conditions: Conditions {
                ok: 4 - outage,
                minor: 0,
                major: 0,
                outage,
            },
            serving: 4 - outage,
        };
        // Four fresh instances, this one among them and OUTAGE, two others OUTAGE too: 2 of
        // the 3 others share it.
        let mut view = FleetView::from_counts(vec![counts(3)], HealthRule::default());
        view.own = Some(("east".into(), CheckStatus::Outage));
        assert_eq!(
            view.shared_failure("east", "me", CheckStatus::Outage),
            Some((2, 3))
        );
        // Only one other: this instance's own failure.
        let mut alone = FleetView::from_counts(vec![counts(2)], HealthRule::default());
        alone.own = Some(("east".into(), CheckStatus::Outage));
        assert_eq!(
            alone.shared_failure("east", "me", CheckStatus::Outage),
            None
        );
        // A frozen view is no information, however it reads.
        assert_eq!(
            view.clone()
                .into_stale()
                .shared_failure("east", "me", CheckStatus::Outage),
            None
        );
        assert_eq!(view.shared_failure("west", "me", CheckStatus::Outage), None);
    }

    #[test]
    fn the_condition_comes_first_in_json() {
        let fleet = view(&[(instance("a1", "east", CheckStatus::Ok, false), 0)]).into_stale();
        let json = serde_json::to_string(fleet.datacenter("east").unwrap()).unwrap();
        assert!(json.starts_with(r#"{"condition":"OK","datacenter":"east","healthy":true,"failOpen":false,"stale":true"#), "{json}");
        assert!(json.contains(r#""instanceId":"a1""#), "{json}");
    }
}
