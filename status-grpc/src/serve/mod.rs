//! A gRPC server bounded against hostile and unlucky peers, where tonic's default builder
//! sets no limit: the health service (and your own services beside it) on a listener whose
//! connections, streams, idle time and log volume are all bounded, so that the gRPC port can
//! never starve the HTTP probes of file descriptors.
//!
//! - **Connection cap** ([`max_connections`](Serve::max_connections)): by default 256, and
//!   never more than a quarter of the process's file-descriptor limit, leaving the rest to
//!   the HTTP listener. Past it, and whenever `accept` runs out of descriptors, the
//!   connection idle longest (no stream open) is closed for the new one; with every
//!   connection busy, the one longest in a stream of the client holding the most; when each
//!   client holds one, new ones wait in the listen backlog.
//! - **Share per client** ([`max_connections_per_client`](Serve::max_connections_per_client)):
//!   half the cap for one IPv4 address or IPv6 /64; past it each new connection of its own
//!   takes the place of its cheapest, so neither a flood of streams nor of hellos from one
//!   address keeps another's Check out.
//! - **Request deadline** ([`request_timeout`](Serve::request_timeout), 10 s): a call whose
//!   request has not arrived whole and been answered by then (a Check whose request never
//!   ends) is answered `DEADLINE_EXCEEDED`; a watch's request counts, its stream does not.
//! - **Handshake timeout** (10 s): a connection that has sent no request by then is closed
//!   (a client that sends only the HTTP/2 preface and SETTINGS, or nothing).
//! - **Idle timeout** (5 min): a connection with no stream open for that long is told to go
//!   away (GOAWAY) and closed. A watch stream keeps its connection busy.
//! - **HTTP/2 keepalive**: a PING every 30 s; a peer that does not answer within 10 s is
//!   closed, streams and all.
//! - **Streams per connection** ([`max_concurrent_streams`](Serve::max_concurrent_streams)):
//!   100, so that one connection holds at most 100 watches; with the health service's cap per
//!   peer address ([`HealthService::max_watches_per_peer`](crate::HealthService::max_watches_per_peer))
//!   no single client can take the watch slots others need.
//! - **Headers** at most 16 KiB a request; HTTP/2 rapid reset bounded by hyper's defaults.
//! - **Warnings rate-limited**: a failing `accept` is logged at most once every 10 s, with
//!   the count of what was not logged.
//! - **Graceful shutdown** ([`with_graceful_shutdown`](Serve::with_graceful_shutdown)): stop
//!   accepting, GOAWAY to every connection, streams end within the
//!   [grace](Serve::grace), then whatever is left is dropped.
//!
//! What it counts is in [`ServerStats`], for `/metrics` (see the crate docs). The accept
//! loop, the cap and the deadlines are status-serve's, the one bounded server status-http's
//! HTTP/1 server is built on too; this module is its HTTP/2 side.

mod grpc;

use std::future::{Future, IntoFuture};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::service::Routes;

pub use status_serve::ServerStats;

/// The most connections by default, before the descriptor limit is taken into account.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// Serves `routes` (the health service and any of yours) on `listener`, with the default
/// limits; see the [module docs](self).
///
/// # Example
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use std::time::Duration;
/// use status_core::Registry;
/// use tonic::service::Routes;
///
/// let registry = Registry::new();
/// let health = status_grpc::HealthService::new(&registry);
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:50051").await?;
/// // Routes::new(health.into_server()).add_service(your_service) for more than health.
/// status_grpc::serve(listener, Routes::new(health.into_server()))
///     .grace(Duration::from_secs(5))
///     .await
/// # }
/// ```
pub fn serve(listener: TcpListener, routes: Routes) -> Serve<std::future::Pending<()>> {
    Serve {
        listener,
        routes,
        signal: std::future::pending(),
        limits: Limits::default(),
        stats: Arc::default(),
    }
}

/// The server [`serve`] returns: set its limits, then `.await` it.
#[must_use = "a server does nothing until awaited"]
pub struct Serve<F> {
    listener: TcpListener,
    routes: Routes,
    signal: F,
    limits: Limits,
    stats: Arc<ServerStats>,
}

impl<F> std::fmt::Debug for Serve<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serve")
            .field("listener", &self.listener)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy)]
struct Limits {
    max_connections: usize,
    max_connections_per_client: Option<usize>,
    handshake_timeout: Duration,
    idle_timeout: Duration,
    keepalive_interval: Duration,
    keepalive_timeout: Duration,
    max_concurrent_streams: u32,
    max_header_list_size: u32,
    request_timeout: Duration,
    grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: default_max_connections(),
            max_connections_per_client: None,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            keepalive_interval: Duration::from_secs(30),
            keepalive_timeout: Duration::from_secs(10),
            max_concurrent_streams: 100,
            max_header_list_size: 16 * 1024,
            request_timeout: Duration::from_secs(10),
            grace: Duration::from_secs(5),
        }
    }
}

/// [`DEFAULT_MAX_CONNECTIONS`], or a quarter of the soft limit on file descriptors when
/// that is lower: the rest is left to the HTTP listener and everything else.
fn default_max_connections() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    let quarter = limit.map_or(usize::MAX, |n| usize::try_from(n / 4).unwrap_or(usize::MAX));
    DEFAULT_MAX_CONNECTIONS.min(quarter).max(1)
}

impl<F> Serve<F> {
    /// Stops the server when `signal` resolves: no new connection, GOAWAY to the others,
    /// streams end within the [grace](Self::grace).
    pub fn with_graceful_shutdown<G>(self, signal: G) -> Serve<G>
    where
        G: Future<Output = ()> + Send + 'static,
    {
        Serve {
            listener: self.listener,
            routes: self.routes,
            signal,
            limits: self.limits,
            stats: self.stats,
        }
    }

    /// How long streams may run on after the shutdown signal. Default 5 s.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.limits.grace = grace;
        self
    }

    /// Connections open at once before the cheapest is closed for a new one: the longest
    /// idle, else the one longest in a request of the client holding the most.
    /// Default [`DEFAULT_MAX_CONNECTIONS`], at most a quarter of the descriptor limit (at
    /// least 1).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.max(1);
        self
    }

    /// Connections one client (an IPv4 address, an IPv6 /64) may hold at once, busy or
    /// idle; past it each new one of its own takes the place of its cheapest (its longest
    /// idle, else the one longest in a request), so that one client holding connections
    /// that never finish cannot take every place, nor keep its own probe out. Default half of
    /// [`max_connections`](Self::max_connections) (at least 1). Behind a proxy every
    /// connection comes from the proxy: raise it to the cap there.
    pub fn max_connections_per_client(mut self, max: usize) -> Self {
        self.limits.max_connections_per_client = Some(max.max(1));
        self
    }

    /// How long a call may take from its headers to the head of its answer: its request
    /// arrived whole and handled. Past it the call is answered `DEADLINE_EXCEEDED`, so that
    /// a Check whose request never ends holds no stream. A watch's stream, once answered,
    /// is not bound by it. Default 10 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.limits.request_timeout = timeout;
        self
    }

    /// How long a new connection may take to send its first request. Default 10 s.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.limits.handshake_timeout = timeout;
        self
    }

    /// How long a connection may stay open with no stream. Default 5 minutes.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// The HTTP/2 keepalive: a PING every `interval`, the connection closed when one is not
    /// answered within `timeout`. Default 30 s and 10 s.
    pub fn keepalive(mut self, interval: Duration, timeout: Duration) -> Self {
        self.limits.keepalive_interval = interval;
        self.limits.keepalive_timeout = timeout;
        self
    }

    /// Streams one connection may have open at once (watches included). Default 100.
    pub fn max_concurrent_streams(mut self, max: u32) -> Self {
        self.limits.max_concurrent_streams = max.max(1);
        self
    }

    /// What the server counts, shared with the running server: keep it for `/metrics`.
    #[must_use]
    pub fn stats(&self) -> Arc<ServerStats> {
        Arc::clone(&self.stats)
    }

    /// Counts into `stats` (made beforehand, say for metrics registered before the
    /// listener exists) instead of its own.
    pub fn with_stats(mut self, stats: Arc<ServerStats>) -> Self {
        self.stats = stats;
        self
    }
}

impl<F> IntoFuture for Serve<F>
where
    F: Future<Output = ()> + Send + 'static,
{
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        let Serve {
            listener,
            routes,
            signal,
            limits,
            stats,
        } = self;
        let bounds = status_serve::Bounds {
            max_connections: limits.max_connections,
            grace: limits.grace,
            name: "gRPC",
            per_client: limits
                .max_connections_per_client
                .unwrap_or(limits.max_connections.div_ceil(2))
                .max(1),
        };
        Box::pin(status_serve::run(
            listener,
            grpc::Grpc { routes, limits },
            signal,
            bounds,
            stats,
        ))
    }
}
