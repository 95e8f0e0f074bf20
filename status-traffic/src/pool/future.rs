//! The response future of [`Pool`](super::Pool).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tower::util::Oneshot;
use tower::{BoxError, Service};

use super::error::NoCapacity;
use super::{Counts, Shared};
use crate::limit::Lease;

pin_project! {
    /// The response of a [`Pool`](super::Pool): the chosen node's, or [`NoCapacity`].
    ///
    /// Dropped before the node answers (the caller went away), it releases the node's lease
    /// and counts for nothing.
    pub struct ResponseFuture<S, R>
    where
        S: Service<R>,
    {
        #[pin]
        call: Option<Oneshot<S, R>>,
        done: Option<Done<S, R>>,
    }
}

/// What finishing a call takes.
struct Done<S: Service<R>, R> {
    shared: Arc<Shared<S, R>>,
    id: u64,
    lease: Lease,
    counts: Arc<Counts>,
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
        let result = ready!(call.poll(cx));
        this.call.set(None);
        if let Some(done) = this.done.take() {
            let outcome = done.shared.classify(&result);
            let now = done.shared.now();
            done.lease.finish(now, outcome);
            done.shared.record(done.id, now, outcome);
            done.counts.count(outcome);
        }
        Poll::Ready(result.map_err(Into::into))
    }
}

impl<S: Service<R>, R> std::fmt::Debug for ResponseFuture<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("node", &self.done.as_ref().map(|d| d.id))
            .finish_non_exhaustive()
    }
}
