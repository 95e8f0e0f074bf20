//! A request body with a deadline.

use crate::body::BodyTimeout;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

pin_project! {
    /// A request body that fails with [`BodyTimeout`] once its deadline passes.
    pub(super) struct Deadline<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Sleep,
    }
}

impl<B> Deadline<B> {
    pub(super) fn new(inner: B, deadline: Instant) -> Self {
        Self {
            inner,
            sleep: tokio::time::sleep_until(deadline),
        }
    }
}

impl<B> Body for Deadline<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match this.sleep.poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimeout.into()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
