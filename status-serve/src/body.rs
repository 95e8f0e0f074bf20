//! What a protocol wraps: the response body that keeps its request busy, and the socket that
//! tells its connection when a request's bytes begin.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::{Busy, Conn};

pin_project! {
    /// An answer's body that keeps its request [`Busy`] until it ends or is dropped: a
    /// connection writing an answer (an event stream, a gRPC watch) is never timed out, and
    /// shed only as the cap's last resort.
    #[derive(Debug)]
    pub struct Tracked<B> {
        #[pin]
        inner: B,
        busy: Option<Busy>,
    }
}

impl<B> Tracked<B> {
    /// `inner`, keeping `busy` until it ends.
    pub fn new(inner: B, busy: Busy) -> Self {
        Self {
            inner,
            busy: Some(busy),
        }
    }
}

impl<B: Body> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            this.busy.take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project! {
    /// A socket that tells its connection when the bytes of a request begin to arrive (the
    /// start of HTTP/1's head timeout).
    #[derive(Debug)]
    pub struct Watched<T> {
        #[pin]
        inner: T,
        conn: Arc<Conn>,
    }
}

impl<T> Watched<T> {
    /// `inner`, telling `conn`.
    pub fn new(inner: T, conn: Arc<Conn>) -> Self {
        Self { inner, conn }
    }
}

impl<T: AsyncRead> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let polled = this.inner.poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.conn.bytes_arrived();
        }
        polled
    }
}

impl<T: AsyncWrite> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().inner.poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.project().inner.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
