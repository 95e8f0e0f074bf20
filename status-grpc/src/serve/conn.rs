//! What the server knows of each connection: how many streams it has open, since when it has
//! had none, whether it ever sent a request; and the table of open connections it sheds from.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::sync::lock;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::sync::Notify;
use tokio::time::Instant;

/// One open connection.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) id: u64,
    epoch: Instant,
    /// Streams open: requests being answered, watch streams included.
    streams: AtomicU64,
    /// Milliseconds from the table's epoch to the end of the last stream (or the opening).
    idle_since: AtomicU64,
    /// Whether a request ever arrived: until then the handshake timeout applies.
    spoke: AtomicBool,
    /// Told to close at once.
    pub(super) shed: Notify,
}

impl Conn {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A stream begins: the connection is busy until it ends.
    pub(super) fn begin_stream(self: &Arc<Self>) -> StreamGuard {
        self.spoke.store(true, Ordering::Release);
        self.streams.fetch_add(1, Ordering::AcqRel);
        StreamGuard(Arc::clone(self))
    }

    /// Whether a request ever arrived.
    pub(super) fn spoke(&self) -> bool {
        self.spoke.load(Ordering::Acquire)
    }

    /// Whether a stream is open.
    pub(super) fn is_busy(&self) -> bool {
        self.streams.load(Ordering::Acquire) > 0
    }

    /// The deadline of an idle connection: `handshake` after its opening if it never sent a
    /// request, else `idle` after its last stream ended; `None` while busy.
    pub(super) fn deadline(&self, handshake: Duration, idle: Duration) -> Option<Instant> {
        if self.is_busy() {
            return None;
        }
        let since = self.epoch + Duration::from_millis(self.idle_since.load(Ordering::Acquire));
        let limit = if self.spoke.load(Ordering::Acquire) {
            idle
        } else {
            handshake
        };
        Some(since + limit)
    }

    fn idle_since(&self) -> Option<u64> {
        (!self.is_busy()).then(|| self.idle_since.load(Ordering::Acquire))
    }
}

/// Counts a stream until the answer's body ends or is dropped.
#[derive(Debug)]
pub(super) struct StreamGuard(Arc<Conn>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let conn = &self.0;
        conn.idle_since.store(conn.now(), Ordering::Release);
        conn.streams.fetch_sub(1, Ordering::AcqRel);
    }
}

pin_project! {
    /// An answer's body that keeps its stream counted until it ends or is dropped.
    pub(super) struct Tracked<B> {
        #[pin]
        inner: B,
        guard: Option<StreamGuard>,
    }
}

impl<B> Tracked<B> {
    pub(super) fn new(inner: B, guard: StreamGuard) -> Self {
        Self {
            inner,
            guard: Some(guard),
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
            this.guard.take();
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

/// The open connections.
#[derive(Debug)]
pub(super) struct Table {
    epoch: Instant,
    next: AtomicU64,
    open: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Table {
    pub(super) fn new() -> Self {
        Self {
            epoch: Instant::now(),
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A new connection, idle, not yet spoken.
    pub(super) fn open(&self) -> Arc<Conn> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            epoch: self.epoch,
            streams: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            spoke: AtomicBool::new(false),
            shed: Notify::new(),
        });
        conn.idle_since.store(conn.now(), Ordering::Release);
        self.lock().insert(id, Arc::clone(&conn));
        conn
    }

    pub(super) fn close(&self, conn: &Conn) {
        self.lock().remove(&conn.id);
    }

    /// How many connections are open and not shed.
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Closes the connection that has been idle longest; false when every connection has a
    /// stream open.
    pub(super) fn shed_one(&self) -> bool {
        let mut open = self.lock();
        let oldest = open
            .values()
            .filter_map(|c| c.idle_since().map(|since| (since, c.id)))
            .min();
        let Some((_, id)) = oldest else { return false };
        if let Some(conn) = open.remove(&id) {
            conn.shed.notify_one();
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        lock(&self.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sheds_the_longest_idle_connection_and_never_a_busy_one() {
        let table = Table::new();
        let first = table.open();
        tokio::time::advance(Duration::from_secs(1)).await;
        let second = table.open();
        tokio::time::advance(Duration::from_secs(1)).await;
        let _third = table.open();
        let stream = first.begin_stream();
        assert!(table.shed_one());
        assert!(table.lock().contains_key(&first.id), "busy: kept");
        assert!(
            !table.lock().contains_key(&second.id),
            "the oldest idle goes"
        );
        drop(stream);
        assert!(!first.is_busy());
        assert!(table.shed_one(), "idle again: may go");
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_handshake_then_idle_and_none_while_busy() {
        let s = Duration::from_secs;
        let table = Table::new();
        let conn = table.open();
        let opened = Instant::now();
        assert_eq!(conn.deadline(s(10), s(300)), Some(opened + s(10)));
        tokio::time::advance(s(3)).await;
        let stream = conn.begin_stream();
        assert_eq!(conn.deadline(s(10), s(300)), None, "a stream is open");
        tokio::time::advance(s(100)).await;
        drop(stream);
        assert_eq!(
            conn.deadline(s(10), s(300)),
            Some(opened + s(103) + s(300)),
            "idle from the end of its last stream"
        );
    }
}
