//! Node pools: a dependency that is several nodes, each call going to a node chosen by recent
//! success, under each node's concurrency limit (Tim McCormack's success-prioritized,
//! concurrency-limited stochastic fallback cascade).
//!
//! - Each node keeps six buckets of (finished, succeeded) aged every five seconds, and a
//!   sticky bucket with the last aged-out one that held data ([`NodeStats`]).
//! - Its success rate weighs each bucket three times the next older; a node with no history
//!   uses its sticky bucket (at least 0.0001 / nodes), and a node with no data at all counts
//!   as healthy: a new node competes equally.
//! - Weight = rate³, at least [`WEIGHT_FLOOR`] (0.01): the pool always explores. A node whose
//!   buckets hold only failures still gets about 0.5 % of the calls among three healthy-ish
//!   nodes, so that it shows it recovered within seconds and gets its share back, after a
//!   failure of any length and after every node failed together. (The seed's own floor,
//!   0.0001 / nodes on the rate, is 3.7e-14 once cubed: one call in 10^13.)
//! - **Idle nodes are filled first, in a slowly turning order.** A call goes to the first
//!   node in the fill order that has no call in flight, is not held back, and whose limiter
//!   grants a lease (a node of weight under 1 is passed over with the complementary chance).
//!   The order is a fixed scramble of the nodes read as a ring from an offset that moves by a
//!   twenty-fifth of the nodes every bucket period, so every node takes its turn at the front
//!   within about two minutes. While load is light, calls concentrate on the nodes at the
//!   front, as least-connections does with its ties to the lowest index and as Finagle's
//!   aperture does on purpose: a node that fails for a second while it takes no calls costs
//!   nothing, and a call never waits behind another on a busy node while one is idle. With
//!   [`PoolBuilder::spread`] every call draws from the weighted order instead.
//! - **A failed call holds its node back** ([`DEFAULT_HOLD`], 5 s): it is offered only after
//!   every other, as the routing study's error hold does for least-connections. At most
//!   [`DEFAULT_MAX_HELD`] (half) of the nodes are held at once; past that a failure holds
//!   nothing (counted, [`Pool::holds_refused`]), so a pool-wide failure fails fast instead of
//!   emptying the pool.
//! - **Then the weighted order**: every node not held back, busy or not, in an exact weighted
//!   random order ([`Selector`]), then the held ones likewise. The call goes to the first
//!   whose [`Limiter`] grants a lease; if none does, it fails at once with [`NoCapacity`]
//!   (503). A failing node loses nearly all its traffic at once (held back) and keeps losing
//!   it within a bucket period (weighted), without a circuit breaker.
//! - How a call ended ([`Outcome`]): a success counts for the node; a drop (timeout,
//!   overload) and an ignore (an error unrelated to load) count against it, and the limiter
//!   is told which. A call past the pool's [`timeout`](PoolBuilder::timeout), or dropped by its
//!   caller before the node answered, is a drop at that moment: a node that hangs shows at
//!   once, not when its calls finally end.
//!
//! [`Pool`] is a tower `Service` over the nodes' services; nodes come and go at run time.

mod builder;
mod error;
mod future;
mod order;
mod report;
mod select;
mod service;
mod stats;

pub use self::builder::PoolBuilder;
pub use self::error::{NoCapacity, TimedOut};
pub use self::future::ResponseFuture;
pub use self::report::{verdict, NodeState, HEALTHY_RATE};
pub use self::select::{Selector, DEFAULT_HOLD, DEFAULT_MAX_HELD};
pub use self::stats::{
    weight, Bucket, NodeStats, BUCKETS, BUCKET_PERIOD, RECENCY, STICKY_FLOOR, WEIGHT_FLOOR,
};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use status_core::{Clock, Rng};
use tower::util::Oneshot;
use tower::{BoxError, Service};

use crate::limit::{Gradient2, Limiter, Outcome};
use crate::sync::lock;

/// How a call's result counts: success, drop or ignore.
pub type Classify<S, R> = Arc<
    dyn Fn(&Result<<S as Service<R>>::Response, <S as Service<R>>::Error>) -> Outcome + Send + Sync,
>;

/// A pool of nodes, each a `Service<R>`; see the [module docs](self). Cheap to clone: clones
/// share the nodes and their stats.
///
/// # Example
///
/// ```
/// use status_core::Rng;
/// use status_traffic::pool::Pool;
/// use tower::{service_fn, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let pool = Pool::new(Rng::new(42));
/// for name in ["a", "b", "c"] {
///     pool.add(name, service_fn(move |x: u32| async move { Ok::<_, std::io::Error>((name, x)) }));
/// }
/// let (node, _) = pool.clone().oneshot(7).await.unwrap();
/// assert!(["a", "b", "c"].contains(&node));
/// # }
/// ```
pub struct Pool<S: Service<R>, R> {
    shared: Arc<Shared<S, R>>,
}

impl<S: Service<R>, R> Clone for Pool<S, R> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: Service<R>, R> std::fmt::Debug for Pool<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("nodes", &self.shared.lock().selector.len())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Shared<S: Service<R>, R> {
    state: Mutex<State<S>>,
    clock: Clock,
    classify: Classify<S, R>,
    limiter: Box<dyn Fn() -> Limiter + Send + Sync>,
    timeout: Option<Duration>,
    no_capacity: AtomicU64,
}

struct State<S> {
    /// The nodes, each with its service, limiter and counts, by id.
    selector: Selector<u64, Node<S>>,
    rng: Rng,
    next_id: u64,
}

struct Node<S> {
    id: u64,
    name: String,
    service: S,
    limiter: Limiter,
    counts: Arc<Counts>,
}

/// Calls of one node, by how they ended; `no_capacity`: the cascade found it at its limit.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) success: AtomicU64,
    pub(crate) drop: AtomicU64,
    pub(crate) ignore: AtomicU64,
    pub(crate) no_capacity: AtomicU64,
}

impl Counts {
    pub(crate) fn count(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Success => &self.success,
            Outcome::Drop => &self.drop,
            Outcome::Ignore => &self.ignore,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

impl<S: Service<R>, R> Pool<S, R> {
    /// An empty pool whose shuffles draw from `rng` (seed it for reproducible choices, e.g.
    /// from [`Registry::rng`](status_core::Registry::rng)). Each node gets a
    /// [`Gradient2`] limiter; a call counts as a success when it returns `Ok`, as an ignore
    /// when it returns `Err`.
    pub fn new(rng: Rng) -> Self {
        Self::builder(rng).build()
    }

    /// A pool to configure before it exists (limiters, classification, timeout, clock, holds,
    /// spread), so that no setting can change under a pool in use; as [`new`](Self::new)
    /// without a setting.
    pub fn builder(rng: Rng) -> PoolBuilder<S, R> {
        PoolBuilder {
            shared: Shared {
                state: Mutex::new(State {
                    selector: Selector::with_values(),
                    rng,
                    next_id: 0,
                }),
                clock: Clock::tokio(),
                classify: Arc::new(|result| match result {
                    Ok(_) => Outcome::Success,
                    Err(_) => Outcome::Ignore,
                }),
                limiter: Box::new(|| Limiter::new(Gradient2::default())),
                timeout: None,
                no_capacity: AtomicU64::new(0),
            },
        }
    }

    /// Failures that held nothing because half the nodes (or the share set with
    /// [`hold`](PoolBuilder::hold)) were held already.
    #[must_use]
    pub fn holds_refused(&self) -> u64 {
        self.shared.lock().selector.holds_refused()
    }

    /// Adds a node named `name` without history: it competes as a healthy one. A name
    /// already in the pool has its service replaced and keeps its history.
    pub fn add(&self, name: impl Into<String>, service: S) {
        let name = name.into();
        let mut state = self.shared.lock();
        if let Some(node) = state.selector.values_mut().find(|n| n.name == name) {
            node.service = service;
            return;
        }
        let id = state.next_id;
        state.next_id += 1;
        let node = Node {
            id,
            name,
            service,
            limiter: (self.shared.limiter)(),
            counts: Arc::default(),
        };
        state.selector.insert(id, node);
    }

    /// Removes the node named `name`; calls in flight to it finish. Whether it was there.
    pub fn remove(&self, name: &str) -> bool {
        let mut state = self.shared.lock();
        let Some(id) = state
            .selector
            .values()
            .find(|n| n.name == name)
            .map(|n| n.id)
        else {
            return false;
        };
        state.selector.remove(&id)
    }

    /// Each node's state now, in the order they were added.
    #[must_use]
    pub fn nodes(&self) -> Vec<NodeState> {
        let now = self.shared.now();
        let mut state = self.shared.lock();
        let rates = state.selector.rates(now);
        state
            .selector
            .values()
            .zip(rates)
            .map(|(node, (_, rate))| NodeState {
                name: node.name.clone(),
                rate,
                weight: weight(rate),
                in_flight: node.limiter.in_flight(),
                limit: node.limiter.limit(),
                success: node.counts.success.load(Ordering::Relaxed),
                drop: node.counts.drop.load(Ordering::Relaxed),
                ignore: node.counts.ignore.load(Ordering::Relaxed),
                no_capacity: node.counts.no_capacity.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Calls refused with [`NoCapacity`] since the start.
    #[must_use]
    pub fn no_capacity(&self) -> u64 {
        self.shared.no_capacity.load(Ordering::Relaxed)
    }
}

impl<S: Service<R>, R> Shared<S, R> {
    fn lock(&self) -> MutexGuard<'_, State<S>> {
        lock(&self.state)
    }

    /// The time the stats and limiters are told: since the pool was made.
    pub(crate) fn now(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Records how a call to node `id` ended at `now`.
    pub(crate) fn record(&self, id: u64, now: Duration, outcome: Outcome) {
        self.lock().selector.record(&id, now, outcome);
    }

    /// Records a call to node `id` its caller dropped at `now`.
    pub(crate) fn abandon(&self, id: u64, now: Duration) {
        self.lock().selector.abandon(&id, now);
    }

    pub(crate) fn classify(&self, result: &Result<S::Response, S::Error>) -> Outcome {
        (self.classify)(result)
    }
}

#[cfg(test)]
mod tests;
