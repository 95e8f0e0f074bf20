//! A connection that refuses to read more than a bound in answer to one request: the bytes
//! read since the last write are counted, and past the bound a read fails (the client then
//! drops the connection, as on any I/O error), so that a server streaming an answer without
//! end costs at most the bound, not whatever it sends until the timeout.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// `S`, reading at most `max` bytes between two writes.
#[derive(Debug)]
pub(crate) struct Bounded<S> {
    inner: S,
    read: usize,
    max: usize,
}

impl<S> Bounded<S> {
    /// `inner`, reading at most `max` bytes in answer to each request.
    pub(crate) fn new(inner: S, max: usize) -> Self {
        Self {
            inner,
            read: 0,
            max,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let left = this.max.saturating_sub(this.read);
        if left == 0 {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the server sent more than {} KiB in answer to one request: not the \
                     server expected, or a hostile one",
                    this.max / 1024
                ),
            )));
        }
        let before = buf.filled().len();
        if buf.remaining() <= left {
            let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
            this.read += buf.filled().len() - before;
            return poll;
        }
        // Never more than is left (near the bound only: a buffer of what is left).
        let mut spare = vec![0u8; left];
        let mut limited = ReadBuf::new(&mut spare);
        let poll = Pin::new(&mut this.inner).poll_read(cx, &mut limited);
        buf.put_slice(limited.filled());
        this.read += limited.filled().len();
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &poll {
            if *n > 0 {
                // A new request: a new answer's bound.
                this.read = 0;
            }
        }
        poll
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn reads_at_most_the_bound_between_two_writes() {
        let (near, mut far) = tokio::io::duplex(1 << 20);
        let mut bounded = Bounded::new(near, 100);
        far.write_all(&[b'x'; 300]).await.unwrap();
        let mut got = vec![0u8; 300];
        let mut read = 0;
        let error = loop {
            match bounded.read(&mut got[read..]).await {
                Ok(n) => read += n,
                Err(e) => break e,
            }
        };
        assert_eq!(read, 100, "exactly the bound, then refused");
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(error.to_string().contains("more than 0 KiB"), "{error}");
        // A new request, a new bound.
        bounded.write_all(b"PING\r\n").await.unwrap();
        let mut again = [0u8; 64];
        assert_eq!(bounded.read(&mut again).await.unwrap(), 64);
    }
}
