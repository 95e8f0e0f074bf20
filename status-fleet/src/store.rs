//! The store contract: what a [`FleetStore`] promises, what one beat answers, and where a
//! fleet's views come from ([`FleetSource`]).

use crate::Rejection;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use status_core::Error;

use crate::{
    DatacenterCounts, FleetView, InstancePage, InstanceQuery, InstanceSummary, BEAT_BUCKETS,
    REJECTIONS,
};

/// Where a fleet's views and instances come from: a running [`Fleet`](crate::Fleet), or a
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

    /// Someone looks at what fails across the fleet through this source (the fleet's page,
    /// `GET /fleet`): a store that sends a large fleet's instances only what they are judged
    /// by sends this one the whole list for a while ([`FleetStore::look`]). Nothing by
    /// default.
    fn look(&self) {}
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
    /// When the counts last changed (ms since the epoch, the server's clock): what names
    /// them, so that a client holding them is not sent them again. (A store with an upkeep
    /// counts once a period for every beat of the fleet; a count that says the same keeps
    /// its time.)
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
    /// Whether what fails came as this instance's own rows only (a fleet too large to hand
    /// the whole list to every instance, and no one looking through this one):
    /// [`FleetView::failing_partial`].
    pub failing_partial: bool,
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
            failing_partial: false,
        }
    }
}

/// Why a beat was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeatError {
    /// The store refused what was sent: `bad_id`, `bad_datacenter`, `bad_state`, `too_large`,
    /// `too_many_datacenters`.
    Rejected(Rejection),
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
#[cfg(feature = "redis")]
pub(crate) fn owner_token() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(std::process::id());
    let b = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("{a:016x}{b:016x}")
}

impl std::error::Error for BeatError {}

/// Why an instance id or a data center cannot be in any store: `bad_id` (empty, over 128
/// bytes, a NUL or a newline), `bad_datacenter` (empty, over 64 bytes, a NUL, a newline or a
/// tab). The one validation every store applies, to what it writes and to what it reads back.
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn refusal(id: &str, datacenter: &str) -> Option<Rejection> {
    if id.is_empty() || id.len() > 128 || id.contains(['\0', '\n']) {
        return Some(Rejection::BadId);
    }
    if datacenter.is_empty() || datacenter.len() > 64 || datacenter.contains(['\0', '\n', '\t']) {
        return Some(Rejection::BadDatacenter);
    }
    None
}

/// `me` as every store writes it (its JSON), or why no store may: [`refusal`], or
/// `too_large` past [`MAX_SUMMARY`](crate::MAX_SUMMARY).
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn admit(me: &InstanceSummary) -> Result<String, BeatError> {
    if let Some(reason) = refusal(&me.instance_id, &me.datacenter) {
        return Err(BeatError::Rejected(reason));
    }
    let json = serde_json::to_string(me).map_err(|e| BeatError::Store(e.to_string()))?;
    if json.len() > crate::MAX_SUMMARY {
        return Err(BeatError::Rejected(Rejection::TooLarge));
    }
    Ok(json)
}

/// A boxed future, as the store's methods return them.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a [`Fleet`](crate::Fleet) keeps its instances: Redis ([`RedisFleet`](crate::RedisFleet), feature `redis`), etcd
/// ([`EtcdFleet`](crate::EtcdFleet), feature `etcd`), or a store of your own. [`Fleet`](crate::Fleet), the data-center
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
///   open, by [`Fleet`](crate::Fleet)'s rules, not the store's;
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

    /// Someone looks at what fails across the fleet through this instance: a store that
    /// sends each instance of a large fleet only the rows it is judged by (Redis, past
    /// its failing budget) sends this one the
    /// whole list at its beats for the next minute. Nothing by default: the store's
    /// instances hold the whole list (etcd's watch).
    fn look(&self) {}

    /// Told each time the counts the store keeps may have changed (a watch's event), so that
    /// [`Fleet`](crate::Fleet) takes them at once, between its beats; `None` (the default) for a store whose
    /// counts come only with a beat (Redis).
    fn subscribe(&self) -> Option<tokio::sync::watch::Receiver<()>> {
        None
    }

    /// The counts the store keeps now, without a round trip, when it can vouch for them (its
    /// watch caught up); `None` otherwise, and by default.
    fn counts(&self) -> Option<Vec<DatacenterCounts>> {
        None
    }

    /// Asks the fleet's voice lease of `dependency` in `datacenter` `ask` for `holder`,
    /// lasting `ttl` when taken: who holds it after. One instance of each data center speaks
    /// for it while it holds the lease ([`FleetChorus`](crate::FleetChorus)). What no
    /// instance could have written (a value no store writes, an expiry further than twice
    /// `ttl` ahead, an etcd key under no lease or a lease granted longer) is free, and said
    /// in [`VoiceAnswer::forged`]. By default a store keeps none (an unavailable error):
    /// every instance then tells its own notices.
    ///
    /// # Errors
    ///
    /// [`Error::is_unavailable`]: the store keeps no leases, or cannot be reached.
    fn voice<'a>(
        &'a self,
        datacenter: &'a str,
        dependency: &'a str,
        holder: &'a str,
        ask: VoiceAsk,
        ttl: Duration,
    ) -> Boxed<'a, Result<VoiceAnswer, Error>> {
        let _ = (datacenter, dependency, holder, ask, ttl);
        Box::pin(std::future::ready(Err(Error::unavailable(
            "this fleet store keeps no voice leases",
        ))))
    }
}

/// What is asked of a voice lease ([`FleetStore::voice`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceAsk {
    /// Take it unless another holds it open (a resolved one is taken: a new failure); renew
    /// it when held already.
    Claim,
    /// Take it only if free (its holder gone) or held already: a silent instance taking over.
    TakeOver,
    /// Mark it resolved, if held: the fleet was told its recovery.
    Resolve,
    /// Only read it.
    Peek,
}

/// A voice lease as the store answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoiceLease {
    /// No one holds it (never taken, or its holder stopped renewing it).
    Free,
    /// Held by this instance: it speaks for the fleet.
    Open(String),
    /// Its holder told the fleet's recovery.
    Resolved(String),
}

/// A voice lease as the store answers it, and whether what it held was forged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoiceAnswer {
    /// The lease after the ask.
    pub lease: VoiceLease,
    /// The store held what no instance could have written (garbage, or an expiry beyond
    /// what the TTL allows): it was taken as free. Counted as `forged_lease`.
    pub forged: bool,
}

impl From<VoiceLease> for VoiceAnswer {
    fn from(lease: VoiceLease) -> Self {
        Self {
            lease,
            forged: false,
        }
    }
}

/// A store's cursor: bytes (a key, a member) in hex.
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The most bytes a cursor holds.
#[cfg(any(feature = "redis", feature = "etcd"))]
const MAX_CURSOR: usize = 512;

/// The cursor of a page whose last member (or key) is `last`: its hex; for one longer than a
/// cursor may be (garbage only: no instance writes one), a bound past every member starting
/// with the same [`MAX_CURSOR`] bytes (`forward`; before them, backward), so that the next
/// page goes on past it rather than being refused. `None`: nothing can come after it.
/// (Found by the `store_records` fuzz target: a cursor this store would not take back.)
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn cursor_after(last: &[u8], forward: bool) -> Option<String> {
    if last.len() <= MAX_CURSOR {
        return Some(hex(last));
    }
    let mut bound = last[..MAX_CURSOR].to_vec();
    if forward {
        // The prefix's successor: its last byte below 0xFF plus one, what follows dropped.
        while bound.last() == Some(&0xFF) {
            bound.pop();
        }
        *bound.last_mut()? += 1;
    }
    Some(hex(&bound))
}

/// A cursor's bytes; `None` for what no store handed out (odd, not hex, over 512 bytes).
#[cfg(any(feature = "redis", feature = "etcd"))]
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 2 * MAX_CURSOR {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

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
