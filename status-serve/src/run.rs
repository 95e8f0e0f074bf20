//! The accept loop: the cap, out of descriptors, the graceful end; and what it counts.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::conn::{Conn, Shed, Table};

/// A protocol's side of the server: it serves one accepted connection.
pub trait Protocol: Clone + Send + 'static {
    /// Serves `accepted` until it ends, is shed ([`Conn::shed`]), passes its deadline
    /// ([`Conn::deadline`]), or the server closes (`accepted.closing` turns true: close it
    /// if idle, else once its answers are done). The server forgets the connection when this
    /// returns.
    fn serve(self, accepted: Accepted) -> impl Future<Output = ()> + Send + 'static;
}

/// One accepted connection, handed to its [`Protocol`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Accepted {
    /// The socket.
    pub stream: TcpStream,
    /// The peer's address.
    pub remote: SocketAddr,
    /// The listener's address.
    pub local: SocketAddr,
    /// What the server knows of it: tell it when requests begin ([`Conn::begin`]).
    pub conn: Arc<Conn>,
    /// Turns true when the server shuts down.
    pub closing: watch::Receiver<bool>,
    /// What the server counts: count a connection closed for its deadline
    /// ([`ServerStats::timed_out`]).
    pub stats: Arc<ServerStats>,
}

/// The limits of the accept loop, whatever the protocol.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Connections open at once before the cheapest is closed for a new one: the longest
    /// idle, else the one longest in a request of the client holding the most.
    pub max_connections: usize,
    /// How long connections may run on after the shutdown signal before they are dropped.
    pub grace: Duration,
    /// The protocol's name in log lines (`HTTP`, `gRPC`).
    pub name: &'static str,
    /// Connections one client (an IPv4 address, an IPv6 /64) may hold at once, busy or
    /// idle; past it each new one of its own takes the place of its cheapest (its longest
    /// idle, else the one longest in a request). One client then cannot take every place
    /// with connections that never finish a request (slow bodies, streams held open).
    pub per_client: usize,
}

/// What a bounded server counts: its connections, and those it closed and why.
#[derive(Debug, Default)]
pub struct ServerStats {
    connections: AtomicUsize,
    closed_handshake: AtomicU64,
    closed_idle: AtomicU64,
    shed: AtomicU64,
    shed_busy: AtomicU64,
    accept_failures: AtomicU64,
    refused_client: AtomicU64,
}

impl ServerStats {
    /// Connections open now.
    #[must_use]
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Connections closed for sending no request within the time a first request has.
    #[must_use]
    pub fn closed_handshake(&self) -> u64 {
        self.closed_handshake.load(Ordering::Relaxed)
    }

    /// Connections closed after the idle timeout (or a head's) with no request in progress.
    #[must_use]
    pub fn closed_idle(&self) -> u64 {
        self.closed_idle.load(Ordering::Relaxed)
    }

    /// Connections closed to make room (the cap, a client's share, or out of
    /// descriptors), idle or busy.
    #[must_use]
    pub fn shed(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }

    /// Of those [shed](Self::shed), the ones closed in the middle of a request: with no
    /// idle one to close, the cheapest of the client holding the most places.
    #[must_use]
    pub fn shed_busy(&self) -> u64 {
        self.shed_busy.load(Ordering::Relaxed)
    }

    fn count_shed(&self, shed: Shed) -> bool {
        match shed {
            Shed::None => return false,
            Shed::Idle => {}
            Shed::Busy => {
                self.shed_busy.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.shed.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Failed `accept` calls (out of descriptors, most often).
    #[must_use]
    pub fn accept_failures(&self) -> u64 {
        self.accept_failures.load(Ordering::Relaxed)
    }

    /// Connections of a client holding its share ([`Bounds::per_client`]) that took the
    /// place of one of its own.
    #[must_use]
    pub fn refused_client(&self) -> u64 {
        self.refused_client.load(Ordering::Relaxed)
    }

    /// Counts a connection closed for its deadline: before any request (`spoke` false), or
    /// idle after some.
    pub fn timed_out(&self, spoke: bool) {
        let counter = if spoke {
            &self.closed_idle
        } else {
            &self.closed_handshake
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Serves `protocol` on `listener` within `bounds` until `signal` resolves, then closes
/// gracefully; see the [crate docs](crate). A failing `accept` is never fatal.
///
/// # Errors
///
/// When the listener's own address cannot be read.
pub async fn run<P: Protocol>(
    listener: TcpListener,
    protocol: P,
    signal: impl Future<Output = ()> + Send,
    bounds: Bounds,
    stats: Arc<ServerStats>,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let max = bounds.max_connections.max(1);
    let per_client = bounds.per_client.max(1);
    let table = Arc::new(Table::new());
    let (closing, closing_rx) = watch::channel(false);
    let said = Throttled::new(Duration::from_secs(10));
    let crowded = Throttled::new(Duration::from_secs(10));
    let mut tasks = JoinSet::new();
    let mut signal = pin!(signal);
    loop {
        if table.len() >= max {
            let shed = table.shed_one();
            if shed == Shed::Busy {
                say_busy_shed(&crowded, bounds.name, "the connection cap");
            }
            if !stats.count_shed(shed) {
                // Every connection is answering a request: the backlog waits for one to end.
                tokio::select! {
                    () = &mut signal => break,
                    _ = tasks.join_next() => continue,
                }
            }
        }
        tokio::select! {
            biased;
            () = &mut signal => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    let (conn, shed) = table.open(remote.ip(), per_client);
                    if stats.count_shed(shed) {
                        stats.refused_client.fetch_add(1, Ordering::Relaxed);
                        if let Some(unsaid) = crowded.say() {
                            tracing::warn!(
                                client = %remote.ip(),
                                unsaid,
                                busy = shed == Shed::Busy,
                                "{}: a client holds {per_client} connections, its share: each new one takes the place of its cheapest",
                                bounds.name
                            );
                        }
                    }
                    let served = protocol.clone().serve(Accepted {
                        stream,
                        remote,
                        local,
                        conn: Arc::clone(&conn),
                        closing: closing_rx.clone(),
                        stats: Arc::clone(&stats),
                    });
                    let (table, stats) = (Arc::clone(&table), Arc::clone(&stats));
                    stats.connections.fetch_add(1, Ordering::Relaxed);
                    tasks.spawn(async move {
                        served.await;
                        table.close(&conn);
                        stats.connections.fetch_sub(1, Ordering::Relaxed);
                    });
                }
                Err(e) => accept_failed(&e, &table, &stats, &said, tasks.len(), bounds.name).await,
            },
        }
    }
    drop(listener);
    tracing::info!(
        connections = tasks.len(),
        grace_ms = bounds.grace.as_millis(),
        "{}: closing connections",
        bounds.name
    );
    // Every connection sees it: an idle one closes, a busy one after its answers.
    closing.send_replace(true);
    let drained = tokio::time::timeout(bounds.grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = tasks.len(),
            "{}: grace period over, dropping the connections left",
            bounds.name
        );
        tasks.shutdown().await;
    }
    Ok(())
}

/// A failed `accept`: a connection that died in the backlog is nothing; out of descriptors,
/// the longest idle connection goes (unless shed ones are still closing: room is coming
/// then, and shedding another could close the newest arrival, a probe, for nothing);
/// anything else waits a little. Said at most once every 10 s, with a count. `tasks`: the
/// connections whose tasks still run, shed ones included until they close.
async fn accept_failed(
    error: &io::Error,
    table: &Table,
    stats: &ServerStats,
    said: &Throttled,
    tasks: usize,
    name: &str,
) {
    use io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    stats.accept_failures.fetch_add(1, Ordering::Relaxed);
    let out_of_descriptors = matches!(error.raw_os_error(), Some(23 | 24));
    if out_of_descriptors {
        let closing = tasks > table.len();
        if closing || stats.count_shed(table.shed_one()) {
            // A shed connection's descriptor is freed when its task runs: room is coming.
            tokio::task::yield_now().await;
            return;
        }
        if let Some(unsaid) = said.say() {
            let busy = table.len();
            tracing::warn!(
                connections = busy,
                unsaid,
                "{name}: out of file descriptors, and every one of the {busy} connections is \
                 answering a request; new connections wait in the listen backlog ({unsaid} \
                 more like it not logged): {error}"
            );
        }
    } else if let Some(unsaid) = said.say() {
        tracing::error!(
            unsaid,
            "{name}: cannot accept a connection ({unsaid} more like it not logged): {error}"
        );
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// Says, at most once an interval, that a connection in the middle of a request was closed
/// to make room.
fn say_busy_shed(crowded: &Throttled, name: &str, why: &str) {
    if let Some(unsaid) = crowded.say() {
        tracing::warn!(
            unsaid,
            "{name}: {why} reached with every connection answering: the one longest in a \
             request, of the client holding the most, was closed"
        );
    }
}

/// A warning said at most once an interval, with how many were not said meanwhile: a flood
/// must not become a flood of log lines.
#[derive(Debug)]
pub struct Throttled {
    every: Duration,
    last: Mutex<Option<Instant>>,
    quiet: AtomicU64,
}

impl Throttled {
    /// Said at most once `every`.
    #[must_use]
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            last: Mutex::new(None),
            quiet: AtomicU64::new(0),
        }
    }

    /// Whether to say it now, and how many were not said since the last time.
    pub fn say(&self) -> Option<u64> {
        let now = Instant::now();
        let mut last = crate::sync::lock(&self.last);
        if last.is_some_and(|at| now.duration_since(at) < self.every) {
            self.quiet.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.quiet.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_warning_is_said_once_an_interval_with_a_count() {
        let warn = Throttled::new(Duration::from_secs(10));
        assert_eq!(warn.say(), Some(0));
        for _ in 0..1_744 {
            assert_eq!(warn.say(), None);
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(warn.say(), Some(1_744));
        assert_eq!(warn.say(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn out_of_descriptors_sheds_the_longest_idle_or_waits_for_those_closing() {
        let emfile = io::Error::from_raw_os_error(24);
        let (table, stats, said) = (
            Table::new(),
            ServerStats::default(),
            Throttled::new(Duration::from_secs(10)),
        );
        let (busy, _) = table.open(std::net::Ipv4Addr::LOCALHOST.into(), usize::MAX);
        let _answering = busy.begin();
        let _idle = table
            .open(std::net::Ipv4Addr::new(127, 0, 0, 2).into(), usize::MAX)
            .0;
        accept_failed(&emfile, &table, &stats, &said, 2, "test").await;
        assert_eq!((stats.shed(), table.len()), (1, 1), "the idle one shed");
        // Its task still closing: room is coming, nothing more shed.
        accept_failed(&emfile, &table, &stats, &said, 2, "test").await;
        assert_eq!((stats.shed(), table.len()), (1, 1));
        // Gone, and the one left busy: nothing to shed, said once.
        accept_failed(&emfile, &table, &stats, &said, 1, "test").await;
        assert_eq!((stats.shed(), table.len()), (1, 1));
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        accept_failed(&reset, &table, &stats, &said, 1, "test").await;
        assert_eq!(
            stats.accept_failures(),
            3,
            "a reset in the backlog is not a failure"
        );
    }
}
