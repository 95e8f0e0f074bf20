//! The bodies the server wraps: a request body with a deadline, and a response body that
//! tells its connection when it is done.

use crate::body::BodyTimeout;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::conn::Conn;

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

/// Ends its connection's request when dropped: when hyper has written the response whole,
/// or given up on it.
#[derive(Debug)]
pub(super) struct InFlight(pub(super) Arc<Conn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.end_request();
    }
}

pin_project! {
    /// A response body holding its connection's [`InFlight`].
    pub(super) struct Tracked<B> {
        #[pin]
        inner: B,
        in_flight: InFlight,
    }
}

impl<B> Tracked<B> {
    pub(super) fn new(inner: B, in_flight: InFlight) -> Self {
        Self { inner, in_flight }
    }
}

impl<B: Body> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
