//! The layer, and how it is configured.

use std::sync::Arc;
use std::time::Duration;

use status_core::Clock;
use tower::Layer;

use super::queue::{Settings, Shared};
use super::report::HISTORY;
use super::{state, Shed, ShedSample, ShedState};
use crate::limit::Limiter;

/// Layer of [`Shed`]: sheds load by `limiter`. Defaults: a queue of 64, a queue timeout of
/// 1 s, a total deadline of 2 s, newest first once the queue has stood 250 ms
/// ([`lifo_after`](Self::lifo_after)), every request of priority 0.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_traffic::limit::{Gradient2, Limiter};
/// use status_traffic::shed::ShedLayer;
///
/// let layer: ShedLayer<String> = ShedLayer::new(Limiter::new(Gradient2::default()))
///     .queue(32)
///     .queue_timeout(Duration::from_millis(500))
///     .deadline(Duration::from_secs(1))
///     .priority(|request: &String| if request.starts_with("/checkout") { 1 } else { 0 });
/// assert_eq!(layer.state().queued, 0);
/// ```
pub struct ShedLayer<R> {
    shared: Arc<Shared<R>>,
}

impl<R> Clone for ShedLayer<R> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<R> std::fmt::Debug for ShedLayer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShedLayer")
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

impl<R> ShedLayer<R> {
    /// Sheds load by `limiter`, with the defaults.
    pub fn new(limiter: Limiter) -> Self {
        Self {
            shared: Shared::new(
                limiter,
                Settings::default(),
                Arc::new(|_| 0),
                Clock::tokio(),
            ),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = self.shared.settings;
        change(&mut settings);
        self.shared = Shared::new(
            self.shared.limiter.clone(),
            settings,
            Arc::clone(&self.shared.priority),
            self.shared.clock.clone(),
        );
        self
    }

    /// How many requests may wait beyond the limit (0: none wait).
    #[must_use]
    pub fn queue(self, capacity: usize) -> Self {
        self.with(|s| s.capacity = capacity)
    }

    /// How long a request may wait in the queue before it is refused unprocessed.
    #[must_use]
    pub fn queue_timeout(self, timeout: Duration) -> Self {
        self.with(|s| s.queue_timeout = timeout)
    }

    /// How long a request may take in all, from its arrival, before it is cut off.
    #[must_use]
    pub fn deadline(self, deadline: Duration) -> Self {
        self.with(|s| s.deadline = deadline)
    }

    /// When the queue counts as congested and serves its newest request first (within the
    /// highest priority waiting): once its oldest has waited `after`; `None` keeps it first
    /// come, first served. Default: 250 ms.
    ///
    /// A queue that stands serves every request late, and after a burst keeps serving late
    /// until it drains. Served newest first, the requests whose clients are still waiting
    /// get the capacity, and the oldest run out their queue timeout instead (Facebook's
    /// adaptive LIFO, from "Fail at Scale"). Below the threshold the order is first come,
    /// first served.
    #[must_use]
    pub fn lifo_after(self, after: Option<Duration>) -> Self {
        self.with(|s| s.lifo_after = after)
    }

    /// The clock it is told the time by: pass [`Registry::clock`](status_core::Registry::clock)
    /// so that its times lie on the registry's axis with every other mechanism's. Default:
    /// a Tokio clock of its own.
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        let s = &self.shared;
        self.shared = Shared::new(
            s.limiter.clone(),
            s.settings,
            Arc::clone(&s.priority),
            clock,
        );
        self
    }

    /// How a request's priority is read: higher is served first and shed last.
    #[must_use]
    pub fn priority(mut self, priority: impl Fn(&R) -> u8 + Send + Sync + 'static) -> Self {
        let s = &self.shared;
        self.shared = Shared::new(
            s.limiter.clone(),
            s.settings,
            Arc::new(priority),
            s.clock.clone(),
        );
        self
    }

    /// The limiter.
    #[must_use]
    pub fn limiter(&self) -> Limiter {
        self.shared.limiter.clone()
    }

    /// What the layer (all the services it made) is doing now.
    #[must_use]
    pub fn state(&self) -> ShedState {
        state(&self.shared)
    }

    /// What it did, a sample per period of [`report_to`](Self::report_to), oldest first:
    /// the last ten minutes at one a second. Empty until the layer reports.
    #[must_use]
    pub fn history(&self) -> Vec<ShedSample> {
        self.shared.history().iter().copied().collect()
    }

    /// Keeps `sample`, forgetting the oldest past the history's length.
    pub(super) fn record(&self, sample: ShedSample) {
        let mut history = self.shared.history();
        if history.len() == HISTORY {
            history.pop_front();
        }
        history.push_back(sample);
    }

    /// Time since the layer was made: the clock of its [`history`](Self::history).
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        self.shared.now()
    }
}

impl<S, R> Layer<S> for ShedLayer<R> {
    type Service = Shed<S, R>;

    fn layer(&self, inner: S) -> Self::Service {
        Shed {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}
