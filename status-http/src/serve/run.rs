//! The accept loop and each connection's life: the cap, the slow-client timeouts, the end
//! that always comes.

// The server's settings, as serve/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

pub(super) async fn run<F: Future<Output = ()> + Send + 'static>(
    serve: Serve<F>,
) -> io::Result<()> {
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
