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
//!
//! # The rooms
//!
//! | module | what |
//! |---|---|
//! | `model` | what an instance publishes ([`InstanceSummary`]), the [`HealthRule`], counts by condition, pages of instances |
//! | `view` | [`FleetView`]: data centers judged, failing open together |
//! | `failure` | one dependency failing across a data center ([`DependencyFailure`]), counted from the store's counts |
//! | `shared` | "mine or shared" per dependency: fleet-aware readiness ([`FleetView::readiness`]), what an instance shares |
//! | `store` | the [`FleetStore`] contract every store keeps, what a [`Beat`] answers, [`FleetSource`] |
//! | `tracker` | [`FleetTracker`]: the beat's rules, pure, told the time and the store's answers (status-sim drives it) |
//! | `run` | [`Fleet`]: the thin Tokio driver of a tracker, its stats, the `fleet` dependency |
//! | `excuse` | [`FleetExcuse`]: the view as status-core's readiness [`Excuse`](status_core::Excuse) |
//! | `redis` | [`RedisFleet`] (feature `redis`): two Lua scripts, a constant cost per instance |
//! | `etcd` | [`EtcdFleet`] (feature `etcd`): leases, a watch counted event by event (a pure tally), transactions |
//! | `chorus` | [`ChorusTracker`] (feature `notify`): one voice for a shared failure, pure, told the time, the view and the lease answers; [`FleetChorus`] its Tokio driver, a lease in the store |
//!
//! # Cargo features
//!
//! | feature | what |
//! |---|---|
//! | `redis` | [`RedisFleet`]: the fleet in Redis or Redis Cluster (status-checks' `store::RedisStore`) |
//! | `etcd` | [`EtcdFleet`]: the fleet in etcd (status-checks' `store::EtcdStore`) |
//! | `notify` | [`FleetChorus`]: one notification per shared failure (status-notify's `Chorus`; a lease in the store) |
//!
//! No feature is on by default: without one, the model, the tracker and [`Fleet`] over a
//! store of your own.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "notify")]
mod chorus;
#[cfg(feature = "etcd")]
mod etcd;
mod excuse;
mod failure;
mod model;
#[cfg(feature = "redis")]
mod redis;
mod rule;
mod run;
mod shared;
mod store;
mod sync;
mod tracker;
mod view;

/// Hooks for the fuzz targets of `fuzz/`: the parsers of what the stores hand back, private
/// otherwise. Built for the fuzz targets only (feature `fuzzing`, or `cargo fuzz`'s `--cfg
/// fuzzing`); not part of the API.
#[cfg(all(
    any(fuzzing, feature = "fuzzing"),
    any(feature = "redis", feature = "etcd")
))]
#[doc(hidden)]
pub mod fuzzing {
    use std::time::Duration;

    /// A page of instances from the answer of Redis's list script.
    #[cfg(feature = "redis")]
    pub fn redis_page(
        answer: &[Vec<u8>],
        ttl: Duration,
        limit: usize,
        forward: bool,
    ) -> crate::InstancePage {
        crate::redis::fuzzing::page(answer, ttl, limit, forward)
    }

    /// What fails, from the text Redis's upkeep keeps: the rows, and how many were dropped.
    #[cfg(feature = "redis")]
    pub fn redis_failing(text: &str) -> (Vec<(String, crate::DependencyCount)>, u64) {
        crate::redis::fuzzing::failing(text)
    }

    /// An instance from an etcd key and value, or the reason it is skipped.
    #[cfg(feature = "etcd")]
    pub fn etcd_entry(key: &[u8], value: &[u8]) -> Result<crate::InstanceSummary, &'static str> {
        crate::etcd::fuzzing::entry(key, value)
    }

    /// Why `id` in `datacenter` is refused, if it is.
    pub fn refusal(id: &str, datacenter: &str) -> Option<&'static str> {
        crate::store::refusal(id, datacenter).map(crate::Rejection::as_str)
    }

    /// A cursor's bytes.
    pub fn unhex(text: &str) -> Option<Vec<u8>> {
        crate::store::unhex(text)
    }
}

#[cfg(feature = "notify")]
pub use self::chorus::{ChangeTicket, ChorusStep, ChorusTracker, FleetChorus, LeaseCall};
#[cfg(feature = "etcd")]
pub use self::etcd::{EtcdFleet, FLEET_MARK};
pub use self::excuse::FleetExcuse;
pub use self::failure::DependencyFailure;
pub use self::model::{
    counted_failing, Conditions, DatacenterCounts, DependencyCount, FailingDependency,
    InstancePage, InstanceQuery, InstanceSummary, InstanceView, Member, Own, OwnFailure,
    MAX_FAILING, MAX_FAILING_ROWS,
};
#[cfg(feature = "redis")]
pub use self::redis::{
    RedisFleet, DEFAULT_FAILING_BUDGET, DEFAULT_MAX_DATACENTERS, MAX_DATACENTERS,
};
pub use self::rule::HealthRule;
pub use self::run::Fleet;
#[cfg(all(test, any(feature = "redis", feature = "etcd")))]
use self::store::hex;
#[cfg(feature = "redis")]
use self::store::owner_token;
#[cfg(any(feature = "redis", feature = "etcd"))]
use self::store::unhex;
pub use self::store::{
    Beat, BeatError, Boxed, FleetSource, FleetStats, FleetStore, VoiceAnswer, VoiceAsk, VoiceLease,
};
pub use self::tracker::{Answer, FleetTracker, Note, Published, Told};
pub use self::view::{DatacenterView, FleetView};

/// The most bytes of one instance's summary, in any store.
pub const MAX_SUMMARY: usize = 4096;
/// The most instances one page lists, in any store.
pub const MAX_PAGE: usize = 500;

/// The upper bounds of the beat-duration histogram, in seconds.
pub const BEAT_BUCKETS: [f64; 10] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];
/// Why the store refused or healed something: each a reason counted in
/// `status_fleet_rejected_total{reason}` and said in a log line.
///
/// ```
/// use status_fleet::{Rejection, REJECTIONS};
///
/// for (i, reason) in Rejection::ALL.into_iter().enumerate() {
///     assert_eq!(reason.index(), i);
///     assert_eq!(REJECTIONS[i], reason.as_str());
///     assert_eq!(Rejection::parse(reason.as_str()), Some(reason));
/// }
/// assert_eq!(Rejection::parse("forged_count"), Some(Rejection::ForgedCount));
/// assert_eq!(Rejection::parse("nonsense"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// A key of the wrong type under the fleet's prefix (deleted, rebuilt by the next beats).
    WrongType,
    /// A summary over [`MAX_SUMMARY`] bytes.
    TooLarge,
    /// An instance id empty, over 128 bytes, or with a NUL or a newline.
    BadId,
    /// A data center empty, over 64 bytes, or with a NUL, a newline or a tab.
    BadDatacenter,
    /// A summary whose condition or holds cannot be read.
    BadState,
    /// An instance id another process holds.
    IdTaken,
    /// One data center more than the store keeps.
    TooManyDatacenters,
    /// A failing list that cannot be read.
    BadFailing,
    /// Counts no beat could have written.
    ForgedCount,
    /// A beat that came after its deadline on the server's clock.
    Late,
    /// A voice lease no instance could have written (garbage, or an expiry beyond what the
    /// TTL allows): taken as free, so that it silences no one.
    ForgedLease,
}

impl Rejection {
    /// Every reason, in the order [`REJECTIONS`] names them.
    pub const ALL: [Rejection; 11] = [
        Rejection::WrongType,
        Rejection::TooLarge,
        Rejection::BadId,
        Rejection::BadDatacenter,
        Rejection::BadState,
        Rejection::IdTaken,
        Rejection::TooManyDatacenters,
        Rejection::BadFailing,
        Rejection::ForgedCount,
        Rejection::Late,
        Rejection::ForgedLease,
    ];

    /// Its word: the metric's `reason` label, the store's answer.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Rejection::WrongType => "wrong_type",
            Rejection::TooLarge => "too_large",
            Rejection::BadId => "bad_id",
            Rejection::BadDatacenter => "bad_datacenter",
            Rejection::BadState => "bad_state",
            Rejection::IdTaken => "id_taken",
            Rejection::TooManyDatacenters => "too_many_datacenters",
            Rejection::BadFailing => "bad_failing",
            Rejection::ForgedCount => "forged_count",
            Rejection::Late => "late",
            Rejection::ForgedLease => "forged_lease",
        }
    }

    /// Its place in [`ALL`](Self::ALL) and in every array counted by reason.
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The reason of `word`, if it is one.
    #[must_use]
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == word)
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why the store refused or healed something, as counted: each [`Rejection`]'s word, in
/// order.
pub const REJECTIONS: [&str; 11] = {
    let mut words = [""; 11];
    let mut i = 0;
    while i < words.len() {
        words[i] = Rejection::ALL[i].as_str();
        i += 1;
    }
    words
};
