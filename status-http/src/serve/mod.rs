//! A server for the router with what a production deployment needs and `axum::serve` leaves
//! out: timeouts on slow clients, a connection cap that cannot starve the probes, and a
//! shutdown that always ends.
//!
//! - **Header timeout**: a request's head must arrive whole within it of its first byte
//!   (slowloris), else the connection is closed (looked at no more often than the timeout,
//!   so within twice the timeout at most; no request pays for a timer).
//! - **Idle timeout**: a connection with no request in progress is closed after it. Keep it
//!   longer than your load balancer's own (60 s on AWS ALB), so the balancer never sends a
//!   request down a connection the server is closing.
//! - **Body timeout**: a request body must arrive whole within it of the request's start;
//!   handlers see [`BodyTimeout`] and answer 408.
//! - **Connection cap**: past it, and whenever the process runs out of file descriptors, the
//!   connection that has waited longest without a request in progress is closed to make room.
//!   A flood of connections that send nothing therefore cannot keep a probe out: the probe's
//!   connection is the newest, and it is answered before the flood's newer ones push it out.
//!   With every connection answering a request, the one longest in its request of the client
//!   holding the most places goes (a slow body does the least for its place); when each
//!   client holds one, new ones wait in the listen backlog.
//! - **Graceful shutdown**: when the signal given to
//!   [`with_graceful_shutdown`](Serve::with_graceful_shutdown) resolves (typically
//!   [`shutdown::graceful`](crate::shutdown::graceful), which first fails readiness for its
//!   delay), the server stops accepting, closes connections with no request in progress,
//!   tells event streams to end (the dashboard's sends a last `closing` event; see
//!   [`Closing`]), lets requests in progress finish for the [`grace`](Serve::grace) period,
//!   then drops what is left and returns.
//!
//! HTTP/1.1 only: the probes, admin API and dashboard need nothing more, and a balancer in
//! front speaks HTTP/1.1 to its targets. The accept loop, the cap and the deadlines are
//! status-serve's, the one bounded server status-grpc's HTTP/2 server is built on too; this
//! module is its HTTP/1 side.

mod body;
mod http1;

pub use crate::body::BodyTimeout;
pub use status_serve::ServerStats;

use std::future::{Future, IntoFuture};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The largest request head hyper reads; larger ones get hyper's own bare 431. The router's
/// limits (see [`RequestGuardLayer`](crate::middleware::RequestGuardLayer)) are smaller, so
/// what exceeds those is answered in JSON.
const MAX_HEAD: usize = 128 * 1024;

/// Serves `router` on `listener`, with the default limits; see the [module docs](self).
///
/// # Example
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use std::time::Duration;
/// use status_core::Registry;
/// use status_http::shutdown;
///
/// let registry = Registry::new();
/// let app = status_http::routes(&registry);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// status_http::serve(listener, app)
///     .with_graceful_shutdown(shutdown::graceful(&registry, Duration::from_secs(5)))
///     .grace(Duration::from_secs(10))
///     .await
/// # }
/// ```
pub fn serve(listener: TcpListener, router: Router) -> Serve<std::future::Pending<()>> {
    Serve {
        listener,
        router,
        signal: std::future::pending(),
        limits: Limits::default(),
        stats: Arc::default(),
    }
}

/// The server [`serve`] returns: set its limits, then `.await` it.
#[must_use = "a server does nothing until awaited"]
pub struct Serve<F> {
    listener: TcpListener,
    router: Router,
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
    header_timeout: Duration,
    idle_timeout: Duration,
    body_timeout: Duration,
    grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            max_connections_per_client: None,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(75),
            body_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(5),
        }
    }
}

impl<F> Serve<F> {
    /// Stops the server when `signal` resolves; see the [module docs](self) for the steps.
    pub fn with_graceful_shutdown<G>(self, signal: G) -> Serve<G>
    where
        G: Future<Output = ()> + Send + 'static,
    {
        Serve {
            listener: self.listener,
            router: self.router,
            signal,
            limits: self.limits,
            stats: self.stats,
        }
    }

    /// How long requests in progress may run on after the shutdown signal before they are
    /// dropped. Default 5 s.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.limits.grace = grace;
        self
    }

    /// Connections open at once before the cheapest is closed for a new one: the longest
    /// idle, else the one longest in a request of the client holding the most.
    /// Default 1,024 (at least 1).
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

    /// How long a request's head may take to arrive from its first byte. Default 10 s.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// How long a connection may stay open with no request in progress. Default 75 s.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive from the request's start. Default 30 s.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_timeout = timeout;
        self
    }

    /// What the server counts (connections open, closed and why, shed, failed accepts),
    /// shared with the running server.
    #[must_use]
    pub fn stats(&self) -> Arc<ServerStats> {
        Arc::clone(&self.stats)
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
            router,
            signal,
            limits,
            stats,
        } = self;
        let bounds = status_serve::Bounds {
            max_connections: limits.max_connections,
            grace: limits.grace,
            name: "HTTP",
            per_client: limits
                .max_connections_per_client
                .unwrap_or(limits.max_connections.div_ceil(2))
                .max(1),
        };
        Box::pin(status_serve::run(
            listener,
            http1::Http1 { router, limits },
            signal,
            bounds,
            stats,
        ))
    }
}

/// Told when the server is shutting down, so that a response that never ends by itself (an
/// event stream) can end with a last word.
///
/// [`serve`] puts one in every request's extensions; take it with
/// `Option<Extension<Closing>>` (it is absent under another server).
#[derive(Debug, Clone)]
pub struct Closing(watch::Receiver<bool>);

impl Closing {
    /// Resolves once the server is shutting down.
    pub async fn closed(mut self) {
        // An error means the server is gone, which is as closed as it gets.
        let _ = self.0.wait_for(|closing| *closing).await;
    }

    /// Whether the server is shutting down.
    #[must_use]
    pub fn is_closing(&self) -> bool {
        *self.0.borrow()
    }
}
