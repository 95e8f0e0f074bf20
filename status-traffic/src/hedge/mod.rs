//! Hedged requests: a call still unanswered after a delay (fixed, or a percentile of recent
//! latencies) gets a second copy, sent to the same inner service (over a [`Pool`], another
//! node: the first is busy with the first copy); the first answer wins and the other copy is
//! dropped, which cancels it. A budget caps the extra load as a share of calls (10 % by
//! default), so that a slow dependency is not doubled into an overloaded one.
//!
//! [`Hedger`] is the policy, a state machine told each call's start, its delay passing and
//! its latency; [`HedgeLayer`] drives it over a tower service, and status-sim's `hedge` node
//! drives the same code in virtual time.
//!
//! The first answer wins, whatever it is: an error that comes first is the answer. Hedging
//! buys latency, not retries.
//!
//! [`Pool`]: crate::pool::Pool

mod policy;

pub use self::policy::{HedgeDelay, HedgeSettings, HedgeStats, Hedger};

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::sync::lock;
use status_core::Clock;
use tower::util::Oneshot;
use tower::{BoxError, Layer, Service, ServiceExt};

/// Hedges the calls of the service it wraps; see the [module docs](self).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_traffic::hedge::{HedgeDelay, HedgeLayer, HedgeSettings};
/// use tower::{service_fn, Layer, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let hedge = HedgeLayer::new(HedgeSettings {
///     delay: HedgeDelay::Fixed(Duration::from_millis(50)),
///     ..HedgeSettings::default()
/// });
/// let service = hedge.layer(service_fn(|x: u32| async move { Ok::<_, std::io::Error>(x) }));
/// assert_eq!(service.oneshot(7).await.unwrap(), 7);
/// assert_eq!(hedge.stats().calls, 1);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HedgeLayer {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    hedger: Mutex<Hedger>,
    clock: Clock,
}

impl HedgeLayer {
    /// A layer deciding by `settings`; every service it wraps shares its policy and budget.
    #[must_use]
    pub fn new(settings: HedgeSettings) -> Self {
        Self {
            shared: Arc::new(Shared {
                hedger: Mutex::new(Hedger::new(settings)),
                clock: Clock::tokio(),
            }),
        }
    }

    /// The same layer told the time by `clock` (pass the registry's). Default: a Tokio
    /// clock. Never fails: on a layer already cloned, the one returned starts from the same
    /// policy state but shares it with none of the clones (configure before cloning to share).
    #[must_use]
    pub fn clock(self, clock: Clock) -> Self {
        let hedger = match Arc::try_unwrap(self.shared) {
            Ok(shared) => crate::sync::into_inner(shared.hedger),
            Err(shared) => shared.lock().clone(),
        };
        Self {
            shared: Arc::new(Shared {
                hedger: Mutex::new(hedger),
                clock,
            }),
        }
    }

    /// What it did since it was made: calls, hedges sent, hedges that won, hedges the budget
    /// refused.
    #[must_use]
    pub fn stats(&self) -> HedgeStats {
        self.shared.lock().stats()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Hedger> {
        lock(&self.hedger)
    }
}

impl<S> Layer<S> for HedgeLayer {
    type Service = Hedge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Hedge {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service of [`HedgeLayer`].
#[derive(Debug, Clone)]
pub struct Hedge<S> {
    inner: S,
    shared: Arc<Shared>,
}

/// The response future of [`Hedge`].
pub type HedgeFuture<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

impl<S, R> Service<R> for Hedge<S>
where
    S: Service<R> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: Into<BoxError>,
    R: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = HedgeFuture<S::Response>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Each copy waits for its own readiness (`oneshot`): a hedge needs a second call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: R) -> Self::Future {
        let shared = Arc::clone(&self.shared);
        let started = shared.clock.now();
        let delay = shared.lock().start();
        let second = (self.inner.clone(), request.clone());
        let first = self.inner.clone().oneshot(request);
        Box::pin(async move {
            let mut first: Pin<Box<Oneshot<S, R>>> = Box::pin(first);
            let Some(delay) = delay else {
                let answer = first.await;
                shared
                    .lock()
                    .finish(shared.clock.now().saturating_duration_since(started), false);
                return answer.map_err(Into::into);
            };
            tokio::select! {
                answer = &mut first => {
                    shared.lock().finish(shared.clock.now().saturating_duration_since(started), false);
                    return answer.map_err(Into::into);
                }
                () = tokio::time::sleep(delay) => {}
            }
            if !shared.lock().try_hedge() {
                let answer = first.await;
                shared
                    .lock()
                    .finish(shared.clock.now().saturating_duration_since(started), false);
                return answer.map_err(Into::into);
            }
            let (service, request) = second;
            let hedge = service.oneshot(request);
            // The first answer wins; the other future is dropped here, which cancels it.
            let (answer, by_hedge) = tokio::select! {
                answer = &mut first => (answer, false),
                answer = hedge => (answer, true),
            };
            shared.lock().finish(
                shared.clock.now().saturating_duration_since(started),
                by_hedge,
            );
            answer.map_err(Into::into)
        })
    }
}
