//! What the server knows of each connection: whether a request is in progress, and since
//! when it has been in its current phase; and the table of open connections it sheds from.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::sync::lock;
use pin_project_lite::pin_project;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Waiting for the first byte of a request (a new or kept-alive connection).
const IDLE: u8 = 0;
/// Some bytes of a request's head arrived, not all.
const HEAD: u8 = 1;
/// A request is being answered.
const BUSY: u8 = 2;

/// One open connection.
#[derive(Debug)]
pub(super) struct Conn {
    id: u64,
    phase: AtomicU8,
    /// Milliseconds from the table's epoch to the start of the current phase.
    since: AtomicU64,
    epoch: Instant,
    /// Requests being answered (HTTP/1 answers one at a time, so 0 or 1).
    in_flight: AtomicU64,
    /// Told to close at once.
    pub(super) shed: Notify,
}

impl Conn {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn enter(&self, phase: u8) {
        self.since.store(self.now(), Ordering::Release);
        self.phase.store(phase, Ordering::Release);
    }

    /// A request's head is complete and handed to the service. A busy connection has no
    /// deadline, so its start time is not kept.
    pub(super) fn begin_request(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.phase.store(BUSY, Ordering::Release);
    }

    /// A response was written whole (or dropped).
    pub(super) fn end_request(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.enter(IDLE);
        }
    }

    /// Bytes arrived: the first ones of a request's head start its header timeout.
    fn bytes_arrived(&self) {
        if self.phase.load(Ordering::Relaxed) == IDLE
            && self
                .phase
                .compare_exchange(IDLE, HEAD, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.since.store(self.now(), Ordering::Release);
        }
    }

    /// Whether a request is being answered.
    pub(super) fn is_busy(&self) -> bool {
        self.phase.load(Ordering::Acquire) == BUSY
    }

    /// When to look at this connection again: its deadline if idle or reading a head (`idle`
    /// after its last answer, `header` after the first byte of a head); no later than
    /// `header` from now when idle or busy, since a head may start meanwhile without waking
    /// anyone (so a slow head is closed between one and two header timeouts after its first
    /// byte, and no request pays for a wake-up).
    pub(super) fn next_look(&self, header: Duration, idle: Duration) -> Instant {
        let since = self.epoch + Duration::from_millis(self.since.load(Ordering::Acquire));
        let soon = Instant::now() + header;
        match self.phase.load(Ordering::Acquire) {
            IDLE => (since + idle).min(soon),
            HEAD => since + header,
            _ => soon,
        }
    }

    /// Whether this connection is past its deadline now.
    pub(super) fn expired(&self, header: Duration, idle: Duration) -> bool {
        let since = self.epoch + Duration::from_millis(self.since.load(Ordering::Acquire));
        let now = Instant::now();
        match self.phase.load(Ordering::Acquire) {
            IDLE => now >= since + idle,
            HEAD => now >= since + header,
            _ => false,
        }
    }

    fn idle_since(&self) -> Option<u64> {
        (self.phase.load(Ordering::Acquire) != BUSY).then(|| self.since.load(Ordering::Acquire))
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

    /// A new connection, idle.
    pub(super) fn open(&self) -> Arc<Conn> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            phase: AtomicU8::new(IDLE),
            since: AtomicU64::new(0),
            epoch: self.epoch,
            in_flight: AtomicU64::new(0),
            shed: Notify::new(),
        });
        conn.enter(IDLE);
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

    /// Closes the connection that has waited longest without a request in progress; false
    /// when every connection is answering one.
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        lock(&self.open)
    }
}

pin_project! {
    /// A socket that tells its connection when the bytes of a request begin to arrive.
    pub(super) struct Watched<T> {
        #[pin]
        inner: T,
        conn: Arc<Conn>,
    }
}

impl<T> Watched<T> {
    pub(super) fn new(inner: T, conn: Arc<Conn>) -> Self {
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
        let third = table.open();
        first.begin_request();
        assert!(table.shed_one());
        assert!(table.lock().contains_key(&first.id), "busy: kept");
        assert!(
            !table.lock().contains_key(&second.id),
            "the oldest idle goes"
        );
        assert!(table.lock().contains_key(&third.id));
        assert!(table.shed_one());
        assert!(!table.shed_one(), "the busy one stays");
        first.end_request();
        assert!(table.shed_one(), "done answering, it can go");
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_has_the_header_deadline_from_its_first_byte() {
        let table = Table::new();
        let conn = table.open();
        let header = Duration::from_secs(5);
        let idle = Duration::from_secs(60);
        let opened = Instant::now();
        assert_eq!(
            conn.next_look(header, idle),
            opened + header,
            "looked at while idle"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(!conn.expired(header, idle));
        conn.bytes_arrived();
        let first_byte = Instant::now();
        assert_eq!(conn.next_look(header, idle), first_byte + header);
        tokio::time::advance(header).await;
        assert!(conn.expired(header, idle), "a slow head");
        conn.begin_request();
        assert!(!conn.expired(header, idle), "never while answering");
        tokio::time::advance(Duration::from_secs(100)).await;
        assert!(!conn.expired(header, idle));
        conn.end_request();
        let answered = Instant::now();
        tokio::time::advance(idle - Duration::from_secs(1)).await;
        assert!(!conn.expired(header, idle));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(conn.expired(header, idle), "idle since {answered:?}");
    }
}
