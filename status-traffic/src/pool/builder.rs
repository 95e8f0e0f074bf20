//! A pool configured before it exists: no setting can change under a pool in use, and no
//! setter can fail.

use std::sync::Arc;
use std::time::Duration;

use status_core::Clock;
use tower::Service;

use super::{Pool, Shared};
use crate::limit::{Limiter, Outcome};

/// A [`Pool`] being configured ([`Pool::builder`]); [`build`](Self::build) makes it.
pub struct PoolBuilder<S: Service<R>, R> {
    pub(super) shared: Shared<S, R>,
}

impl<S: Service<R>, R> std::fmt::Debug for PoolBuilder<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("timeout", &self.shared.timeout)
            .finish_non_exhaustive()
    }
}

impl<S: Service<R>, R> PoolBuilder<S, R> {
    /// How each node's limiter is made (for nodes added from now on).
    #[must_use]
    pub fn limiter(mut self, make: impl Fn() -> Limiter + Send + Sync + 'static) -> Self {
        self.shared.limiter = Box::new(make);
        self
    }

    /// How a call's result counts: [`Outcome::Success`], [`Outcome::Drop`] (a timeout or
    /// overload: the limiter backs off) or [`Outcome::Ignore`] (a failure unrelated to load).
    /// An HTTP client would count a 5xx as a failure, a timeout as a drop.
    #[must_use]
    pub fn classify(
        mut self,
        classify: impl Fn(&Result<S::Response, S::Error>) -> Outcome + Send + Sync + 'static,
    ) -> Self {
        self.shared.classify = Arc::new(classify);
        self
    }

    /// How long a node may take: a call still in flight then is cut off, answers
    /// [`TimedOut`](super::TimedOut), and counts as a drop against its node at once (its limiter backs off,
    /// its rate falls). Without one, a node that hangs is seen only when its callers give up
    /// (a dropped call counts as a drop too).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.shared.timeout = Some(timeout);
        self
    }

    /// The clock it is told the time by: pass [`Registry::clock`](status_core::Registry::clock)
    /// so that its times lie on the registry's axis with every other mechanism's. Default:
    /// a Tokio clock of its own.
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.shared.clock = clock;
        self
    }

    /// A failed call holds its node back for `hold` (zero: never), offered only after every
    /// other node, while at most `max_share` of the nodes are held at once; past that share a
    /// failure holds nothing, so a pool-wide failure fails fast instead of emptying the pool.
    /// Default: [`DEFAULT_HOLD`](super::DEFAULT_HOLD) (5 s) and [`DEFAULT_MAX_HELD`](super::DEFAULT_MAX_HELD) (half the nodes).
    #[must_use]
    pub fn hold(mut self, hold: Duration, max_share: f64) -> Self {
        let state = crate::sync::get_mut(&mut self.shared.state);
        state.selector = std::mem::take(&mut state.selector).hold(hold, max_share);
        self
    }

    /// Every call draws its node from the weighted order, idle or not, instead of filling
    /// idle nodes in a slowly turning rank order first: load spreads evenly at any rate, at
    /// the price of meeting more failures that come and go (see the [module docs](super)).
    #[must_use]
    pub fn spread(mut self) -> Self {
        let state = crate::sync::get_mut(&mut self.shared.state);
        state.selector = std::mem::take(&mut state.selector).spread();
        self
    }

    /// The pool, empty: add its nodes with [`Pool::add`].
    #[must_use]
    pub fn build(self) -> Pool<S, R> {
        Pool {
            shared: Arc::new(self.shared),
        }
    }
}
