//! The response future of [`Pool`](super::Pool).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower::util::Oneshot;
use tower::{BoxError, Service};

use super::error::{NoCapacity, TimedOut};
use super::{Counts, Shared};
use crate::limit::{Lease, Outcome};

pin_project! {
    /// The response of a [`Pool`](super::Pool): the chosen node's, [`NoCapacity`], or
    /// [`TimedOut`] past the pool's timeout.
    ///
    /// A call counts against its node as it ends: cut off by the timeout, or dropped by the
    /// caller before the node answered (the caller's own timeout, most often), it is a drop
    /// at that moment, so that nodes that hang are seen as soon as their callers give up. A
    /// call its caller dropped holds its node back for nothing: a hedge's losing copy is not
    /// the node's failure.
    pub struct ResponseFuture<S, R>
    where
        S: Service<R>,
    {
        #[pin]
        call: Option<Oneshot<S, R>>,
        #[pin]
        timeout: Option<Sleep>,
        done: Option<Done<S, R>>,
    }

    impl<S, R> PinnedDrop for ResponseFuture<S, R>
    where
        S: Service<R>,
    {
        fn drop(this: Pin<&mut Self>) {
            if let Some(done) = this.project().done.take() {
                done.abandon();
            }
        }
    }
}

/// What finishing a call takes.
struct Done<S: Service<R>, R> {
    shared: Arc<Shared<S, R>>,
    id: u64,
    lease: Lease,
    counts: Arc<Counts>,
}

impl<S: Service<R>, R> Done<S, R> {
    /// Ends the lease, records the outcome in the node's stats and counts it.
    fn finish(self, outcome: Outcome) {
        let now = self.shared.now();
        self.lease.finish(now, outcome);
        self.shared.record(self.id, now, outcome);
        self.counts.count(outcome);
    }

    /// The caller dropped the call before the node answered: a drop, as in
    /// [`finish`](Self::finish), that holds nothing back (the caller may simply have had its
    /// answer elsewhere, from a hedge).
    fn abandon(self) {
        let now = self.shared.now();
        self.lease.finish(now, Outcome::Drop);
        self.shared.abandon(self.id, now);
        self.counts.count(Outcome::Drop);
    }
}

impl<S: Service<R>, R> ResponseFuture<S, R> {
    pub(super) fn call(
        shared: Arc<Shared<S, R>>,
        id: u64,
        call: Oneshot<S, R>,
        lease: Lease,
        counts: Arc<Counts>,
    ) -> Self {
        Self {
            call: Some(call),
            timeout: shared.timeout.map(tokio::time::sleep),
            done: Some(Done {
                shared,
                id,
                lease,
                counts,
            }),
        }
    }

    pub(super) fn no_capacity() -> Self {
        Self {
            call: None,
            timeout: None,
            done: None,
        }
    }
}

impl<S, R> Future for ResponseFuture<S, R>
where
    S: Service<R>,
    S::Error: Into<BoxError>,
{
    type Output = Result<S::Response, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(call) = this.call.as_mut().as_pin_mut() else {
            return Poll::Ready(Err(NoCapacity.into()));
        };
        if let Poll::Ready(result) = call.poll(cx) {
            this.call.set(None);
            if let Some(done) = this.done.take() {
                let outcome = done.shared.classify(&result);
                done.finish(outcome);
            }
            return Poll::Ready(result.map_err(Into::into));
        }
        let Some(timeout) = this.timeout.as_pin_mut() else {
            return Poll::Pending;
        };
        ready!(timeout.poll(cx));
        this.call.set(None);
        if let Some(done) = this.done.take() {
            done.finish(Outcome::Drop);
        }
        Poll::Ready(Err(TimedOut.into()))
    }
}

impl<S: Service<R>, R> std::fmt::Debug for ResponseFuture<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("node", &self.done.as_ref().map(|d| d.id))
            .finish_non_exhaustive()
    }
}
