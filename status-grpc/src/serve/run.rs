//! The accept loop and each connection's life: the cap, the shedding of the longest idle,
//! the timeouts, the graceful end.

// The server's settings and stats, as serve/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

/// A warning said at most once an interval, with how many were not said meanwhile.
#[derive(Debug)]
struct Throttled {
    every: Duration,
    last: Mutex<Option<Instant>>,
    quiet: AtomicU64,
}

impl Throttled {
    fn new(every: Duration) -> Self {
        Self {
            every,
            last: Mutex::new(None),
            quiet: AtomicU64::new(0),
        }
    }

    /// Whether to say it now, and how many were not said since the last time.
    fn say(&self) -> Option<u64> {
        let now = Instant::now();
        let mut last = lock(&self.last);
        if last.is_some_and(|at| now.duration_since(at) < self.every) {
            self.quiet.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        *last = Some(now);
        Some(self.quiet.swap(0, Ordering::Relaxed))
    }
}

pub(super) async fn run<F: Future<Output = ()> + Send + 'static>(
    serve: Serve<F>,
) -> io::Result<()> {
    let Serve {
        listener,
        routes,
        signal,
        limits,
        stats,
    } = serve;
    let local = listener.local_addr()?;
    let table = Arc::new(Table::new());
    let (closing, closing_rx) = watch::channel(false);
    let warn = Throttled::new(Duration::from_secs(10));
    let mut tasks = JoinSet::new();
    let mut signal = pin!(signal);
    loop {
        if table.len() >= limits.max_connections {
            if table.shed_one() {
                stats.shed.fetch_add(1, Ordering::Relaxed);
            } else {
                // Every connection has a stream open: the backlog waits for one to end.
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
                    let conn = table.open();
                    tasks.spawn(connection(Connection {
                        stream,
                        remote,
                        local,
                        conn,
                        table: Arc::clone(&table),
                        routes: routes.clone(),
                        limits,
                        stats: Arc::clone(&stats),
                        closing: closing_rx.clone(),
                    }));
                }
                Err(e) => accept_failed(&e, &table, &stats, &warn, tasks.len()).await,
            },
        }
    }
    drop(listener);
    tracing::info!(
        connections = tasks.len(),
        grace_ms = limits.grace.as_millis(),
        "gRPC: closing connections"
    );
    closing.send_replace(true);
    let drained = tokio::time::timeout(limits.grace, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            connections = tasks.len(),
            "gRPC: grace period over, dropping the connections left"
        );
        tasks.shutdown().await;
    }
    Ok(())
}

/// A failed `accept`: a connection that died in the backlog is nothing; out of descriptors,
/// the longest idle connection goes (if shed ones are not already closing); anything else
/// waits a little. Said at most once every 10 s, with a count.
async fn accept_failed(
    error: &io::Error,
    table: &Table,
    stats: &ServerStats,
    warn: &Throttled,
    tasks: usize,
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
    if out_of_descriptors && (tasks > table.len() || table.shed_one()) {
        if tasks <= table.len() {
            stats.shed.fetch_add(1, Ordering::Relaxed);
        }
        // A shed connection's descriptor is freed when its task runs: room is coming.
        tokio::task::yield_now().await;
        return;
    }
    if let Some(unsaid) = warn.say() {
        tracing::warn!(
            connections = table.len(),
            unsaid,
            "gRPC: cannot accept a connection ({unsaid} more like it not logged): {error}"
        );
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// What one connection's task needs.
struct Connection {
    stream: TcpStream,
    remote: SocketAddr,
    local: SocketAddr,
    conn: Arc<Conn>,
    table: Arc<Table>,
    routes: Routes,
    limits: Limits,
    stats: Arc<ServerStats>,
    closing: watch::Receiver<bool>,
}

/// Serves one connection until it ends, is shed, times out, or the grace period ends.
async fn connection(c: Connection) {
    let Connection {
        stream,
        remote,
        local,
        conn,
        table,
        routes,
        limits,
        stats,
        mut closing,
    } = c;
    stats.connections.fetch_add(1, Ordering::Relaxed);
    let _ = stream.set_nodelay(true);
    let service = {
        let conn = Arc::clone(&conn);
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let stream = conn.begin_stream();
            request.extensions_mut().insert(TcpConnectInfo {
                local_addr: Some(local),
                remote_addr: Some(remote),
            });
            let answer = routes.clone().oneshot(request);
            async move {
                let response = answer.await?;
                Ok::<_, Infallible>(response.map(|body| Tracked::new(body, stream)))
            }
        })
    };
    let mut http = http2::Builder::new(TokioExecutor::new());
    http.timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_concurrent_streams)
        .keep_alive_interval(limits.keepalive_interval)
        .keep_alive_timeout(limits.keepalive_timeout)
        .max_header_list_size(limits.max_header_list_size);
    let mut served = pin!(http.serve_connection(TokioIo::new(stream), service));
    let mut closing_seen = *closing.borrow();
    if closing_seen {
        served.as_mut().graceful_shutdown();
    }
    // Once told to go away for idleness, how long it may take to say goodbye.
    let mut leaving: Option<Instant> = None;
    loop {
        let deadline =
            leaving.or_else(|| conn.deadline(limits.handshake_timeout, limits.idle_timeout));
        let look = deadline.unwrap_or_else(|| Instant::now() + limits.handshake_timeout);
        tokio::select! {
            result = served.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%remote, "gRPC connection ended: {e}");
                }
                break;
            }
            () = conn.shed.notified() => {
                tracing::debug!(%remote, "gRPC connection shed");
                break;
            }
            changed = closing.changed(), if !closing_seen => {
                closing_seen = true;
                if changed.is_err() {
                    break;
                }
                served.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(look) => {
                if leaving.is_some() {
                    break;
                }
                let Some(deadline) = conn.deadline(limits.handshake_timeout, limits.idle_timeout) else {
                    continue;
                };
                if Instant::now() < deadline {
                    continue;
                }
                if conn.spoke() {
                    stats.closed_idle.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%remote, "gRPC connection idle: going away");
                    served.as_mut().graceful_shutdown();
                    leaving = Some(Instant::now() + Duration::from_secs(1));
                } else {
                    stats.closed_handshake.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%remote, "gRPC connection sent no request in time");
                    break;
                }
            }
        }
    }
    table.close(&conn);
    stats.connections.fetch_sub(1, Ordering::Relaxed);
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
}
