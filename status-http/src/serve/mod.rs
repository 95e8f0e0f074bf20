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
//!   Connections answering a request are never shed; with all of them busy, new ones wait in
//!   the listen backlog.
//! - **Graceful shutdown**: when the signal given to
//!   [`with_graceful_shutdown`](Serve::with_graceful_shutdown) resolves (typically
//!   [`shutdown::graceful`](crate::shutdown::graceful), which first fails readiness for its
//!   delay), the server stops accepting, closes connections with no request in progress,
//!   tells event streams to end (the dashboard's sends a last `closing` event; see
//!   [`Closing`]), lets requests in progress finish for the [`grace`](Serve::grace) period,
//!   then drops what is left and returns.
//!
//! HTTP/1.1 only: the probes, admin API and dashboard need nothing more, and a balancer in
//! front speaks HTTP/1.1 to its targets.

mod accept;
mod body;
mod conn;

pub use crate::body::BodyTimeout;

use std::convert::Infallible;
use std::future::{Future, IntoFuture};
use std::io;
use std::net::SocketAddr;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

use self::accept::{out_of_descriptors, Accept};
use self::body::{Deadline, InFlight, Tracked};
use self::conn::{Conn, Table, Watched};

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
    }
}

/// The server [`serve`] returns: set its limits, then `.await` it.
#[must_use = "a server does nothing until awaited"]
pub struct Serve<F> {
    listener: TcpListener,
    router: Router,
    signal: F,
    limits: Limits,
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
    header_timeout: Duration,
    idle_timeout: Duration,
    body_timeout: Duration,
    grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
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
        }
    }

    /// How long requests in progress may run on after the shutdown signal before they are
    /// dropped. Default 5 s.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.limits.grace = grace;
        self
    }

    /// Connections open at once before the longest idle one is closed for a new one.
    /// Default 1,024 (at least 1).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.max(1);
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
}

impl<F> IntoFuture for Serve<F>
where
    F: Future<Output = ()> + Send + 'static,
{
    type Output = io::Result<()>;
    type IntoFuture = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(run(self))
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

async fn run<F: Future<Output = ()> + Send + 'static>(serve: Serve<F>) -> io::Result<()> {
    let Serve {
        listener,
        router,
        signal,
        limits,
    } = serve;
    let table = Arc::new(Table::new());
    let (closing, closing_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut signal = pin!(signal);
    let mut said = Said::default();
    loop {
        if tasks.len() >= limits.max_connections && !table.shed_one() {
            // Every connection is answering a request: let the backlog wait for one to end.
            tokio::select! {
                () = &mut signal => break,
                _ = tasks.join_next() => continue,
            }
        }
        tokio::select! {
            biased;
            () = &mut signal => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    let conn = table.open();
                    tasks.spawn(connection(
                        stream,
                        remote,
                        conn,
                        Arc::clone(&table),
                        router.clone(),
                        limits,
                        closing_rx.clone(),
                    ));
                }
                Err(e) => accept_failed(&e, &table, tasks.len(), &mut said).await,
            },
        }
    }
    drop(listener);
    tracing::info!(
        connections = tasks.len(),
        grace_ms = limits.grace.as_millis(),
        "closing connections"
    );
    // Every connection sees it: an idle one closes, a busy one after its answer.
    closing.send_replace(true);
    let drained = tokio::time::timeout(limits.grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = tasks.len(),
            "grace period over: dropping the connections left"
        );
        tasks.shutdown().await;
    }
    Ok(())
}

/// What to do when `accept` fails: make room when out of file descriptors, wait a little
/// on anything else but a connection that died in the backlog. Never fatal, as with
/// `axum::serve`. `tasks`: the connections whose tasks still run (shed ones included until
/// they close).
async fn accept_failed(error: &io::Error, table: &Table, tasks: usize, said: &mut Said) {
    match out_of_descriptors(error, table, tasks) {
        Accept::Gone => return,
        Accept::Room => {
            // A shed connection's descriptor is freed when its task runs: room is coming.
            tokio::task::yield_now().await;
            return;
        }
        Accept::AllBusy(busy) => {
            if let Some(unsaid) = said.now() {
                tracing::warn!(
                    connections = busy,
                    unsaid,
                    "out of file descriptors, and every one of the {busy} connections is \
                     answering a request; new connections wait in the listen backlog \
                     ({unsaid} more like it not logged): {error}"
                );
            }
        }
        Accept::Failed => {
            if let Some(unsaid) = said.now() {
                tracing::error!(
                    unsaid,
                    "cannot accept a connection ({unsaid} more like it not logged): {error}"
                );
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// A failing `accept` is said at most once every 10 s, with how many were not said since:
/// a flood must not become a flood of log lines.
#[derive(Debug, Default)]
struct Said {
    last: Option<tokio::time::Instant>,
    unsaid: u64,
}

impl Said {
    /// Whether to say it now, and how many were not said since the last time.
    fn now(&mut self) -> Option<u64> {
        let now = tokio::time::Instant::now();
        if self
            .last
            .is_some_and(|at| now.duration_since(at) < Duration::from_secs(10))
        {
            self.unsaid += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.unsaid))
    }
}

/// Serves one connection until it ends, is shed, times out, or the grace period ends.
async fn connection(
    stream: TcpStream,
    remote: SocketAddr,
    conn: Arc<Conn>,
    table: Arc<Table>,
    router: Router,
    limits: Limits,
    mut closing: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Watched::new(stream, Arc::clone(&conn)));
    let service = {
        let conn = Arc::clone(&conn);
        let closing = Closing(closing.clone());
        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            conn.begin_request();
            let in_flight = InFlight(Arc::clone(&conn));
            let mut request = if request.body().is_end_stream() {
                request.map(axum::body::Body::new)
            } else {
                let deadline = tokio::time::Instant::now() + limits.body_timeout;
                request.map(|body| axum::body::Body::new(Deadline::new(body, deadline)))
            };
            request.extensions_mut().insert(ConnectInfo(remote));
            request.extensions_mut().insert(closing.clone());
            let response = router.clone().oneshot(request);
            async move {
                let response = response.await?;
                Ok::<_, Infallible>(response.map(|body| Tracked::new(body, in_flight)))
            }
        })
    };
    let mut http = http1::Builder::new();
    http.max_buf_size(MAX_HEAD).header_read_timeout(None);
    let mut served = pin!(http.serve_connection(io, service));
    let mut closing_seen = *closing.borrow();
    if closing_seen {
        served.as_mut().graceful_shutdown();
    }
    loop {
        let look = conn.next_look(limits.header_timeout, limits.idle_timeout);
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%remote, "connection ended: {e}");
                }
                break;
            }
            () = conn.shed.notified() => {
                tracing::debug!(%remote, "connection shed");
                break;
            }
            changed = closing.changed(), if !closing_seen => {
                closing_seen = true;
                if changed.is_err() || !conn.is_busy() {
                    break;
                }
                // Ends the connection once the request in progress is answered.
                served.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(look) => {
                if conn.expired(limits.header_timeout, limits.idle_timeout) {
                    tracing::debug!(%remote, "connection timed out");
                    break;
                }
            }
        }
    }
    table.close(&conn);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_failing_accept_is_said_once_every_ten_seconds_with_a_count() {
        let mut said = Said::default();
        assert_eq!(said.now(), Some(0));
        for _ in 0..499 {
            assert_eq!(said.now(), None);
        }
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(said.now(), Some(499));
        assert_eq!(said.now(), None);
    }
}
