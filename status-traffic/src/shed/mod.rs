//! Load shedding: a tower layer that admits work by a [`Limiter`](crate::limit::Limiter), queues a bounded number of
//! requests beyond it, and answers the rest at once instead of letting response times climb.
//!
//! - In flight: at most the limiter's limit (adaptive with [`Gradient2`](crate::limit::Gradient2),
//!   [`Vegas`](crate::limit::Vegas) or [`Aimd`](crate::limit::Aimd)).
//! - Queued: at most `queue` more, highest [priority](ShedLayer::priority) first. A full queue
//!   refuses with [`QueueFull`] (429); a request of higher priority than the lowest queued one
//!   takes its place, and that one gets [`QueueFull`]. Within a priority, first come first
//!   served, until the queue has stood for a while: then newest first
//!   ([`lifo_after`](ShedLayer::lifo_after)), so that a burst is forgotten as soon as it ends.
//! - A request that waited longer than the queue timeout gets [`QueueTimeout`] (503) and is
//!   never processed.
//! - A request that runs past the total deadline (counted from its arrival) gets [`Elapsed`]
//!   (503); its work is dropped, and its lease ends as a drop, so the limit backs off.
//!
//! Errors are `BoxError`s, as with tower's own middleware; `status-http` renders them. The
//! layer reports into a registry as a passive dependency with
//! [`ShedLayer::report_to`]: MINOR while it sheds.

mod error;
pub mod future;
mod layer;
mod queue;
mod report;
mod room;

pub use self::error::{Elapsed, QueueFull, QueueTimeout};
pub use self::layer::ShedLayer;
pub use self::report::{verdict, ShedSample};
pub use self::room::{expiry, Expired, WaitingRoom};

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower::{BoxError, Service};

use self::future::ResponseFuture;
use self::queue::Shared;

/// What [`ShedLayer`] makes of a service; see the [module docs](self).
pub struct Shed<S, R> {
    inner: S,
    shared: Arc<Shared<R>>,
}

impl<S: Clone, R> Clone for Shed<S, R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: std::fmt::Debug, R> std::fmt::Debug for Shed<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shed")
            .field("inner", &self.inner)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

impl<S, R> Shed<S, R> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// What the layer is doing now.
    pub fn state(&self) -> ShedState {
        state(&self.shared)
    }
}

/// A snapshot of a shedding layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShedState {
    /// The limit now.
    pub limit: usize,
    /// Requests being processed.
    pub in_flight: usize,
    /// Requests waiting.
    pub queued: usize,
    /// Refused because the queue was full, since the start.
    pub queue_full: u64,
    /// Refused after waiting too long, since the start.
    pub queue_timeout: u64,
    /// Cut off at the deadline, since the start.
    pub elapsed: u64,
}

fn state<R>(shared: &Shared<R>) -> ShedState {
    ShedState {
        limit: shared.limiter.limit(),
        in_flight: shared.limiter.in_flight(),
        queued: shared.queued(),
        queue_full: shared.counts.queue_full.load(Ordering::Relaxed),
        queue_timeout: shared.counts.queue_timeout.load(Ordering::Relaxed),
        elapsed: shared.counts.elapsed.load(Ordering::Relaxed),
    }
}

impl<S, R> Service<R> for Shed<S, R>
where
    S: Service<R> + Clone,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = ResponseFuture<S, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Admission is decided per request, by the limiter and the queue, never by making the
        // caller wait here; the inner service's own readiness is passed on.
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let priority = (self.shared.priority)(&request);
        ResponseFuture::new(
            Arc::clone(&self.shared),
            priority,
            &mut self.inner,
            request,
            tokio::time::Instant::now(),
        )
    }
}

#[cfg(test)]
mod tests;
