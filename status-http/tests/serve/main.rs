//! `status_http::serve` over real sockets: timeouts, the connection cap, and a shutdown that
//! always ends.
//!
//! Real time with short limits (a few hundred milliseconds); every wait is a read with a
//! deadline, never a fixed sleep before an assertion.

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use status_core::Registry;
use std::future::IntoFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{timeout, Instant};

/// Long enough for anything here to happen on a loaded machine; short enough to fail fast.
const PATIENCE: Duration = Duration::from_secs(10);

struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

/// The contract's routes for an empty registry plus `/hang`, which never answers; served
/// with `limits` applied.
async fn start(
    limits: impl FnOnce(
        status_http::serve::Serve<futures::future::BoxFuture<'static, ()>>,
    ) -> status_http::serve::Serve<futures::future::BoxFuture<'static, ()>>,
) -> Server {
    let registry = Registry::new();
    let app = status_http::Routes::new(&registry)
        .admin_token("t")
        .build()
        .route("/hang", get(std::future::pending::<&'static str>));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let signal: futures::future::BoxFuture<'static, ()> = Box::pin(async move {
        stopped.await.ok();
    });
    let serve = limits(status_http::serve(listener, app).with_graceful_shutdown(signal));
    let task = tokio::spawn(serve.into_future());
    Server {
        addr,
        stop: Some(stop),
        task,
    }
}

impl Server {
    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    /// Signals shutdown; how long the server then took to return.
    async fn shut_down(mut self) -> Duration {
        let signalled = Instant::now();
        self.stop.take().unwrap().send(()).unwrap();
        timeout(PATIENCE, self.task)
            .await
            .expect("the server did not return")
            .unwrap()
            .unwrap();
        signalled.elapsed()
    }
}

/// Reads until the peer closes; what it sent. Panics past [`PATIENCE`].
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    timeout(PATIENCE, stream.read_to_end(&mut out))
        .await
        .expect("the server did not close the connection")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads until `needle` arrives; what was read.
async fn read_until(stream: &mut TcpStream, needle: &str) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let found = timeout(PATIENCE, async {
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before {needle:?}");
            out.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&out).contains(needle) {
                return;
            }
        }
    })
    .await;
    assert!(
        found.is_ok(),
        "no {needle:?} in {:?}",
        String::from_utf8_lossy(&out)
    );
    String::from_utf8_lossy(&out).into_owned()
}

async fn get_live(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET /healthcheck/live HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    read_until(stream, "\"live\":true").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_ends_with_a_closing_event_and_the_server_returns() {
    let server = start(|s| s.grace(Duration::from_secs(30))).await;
    let mut events = server.connect().await;
    events
        .write_all(b"GET /status/events HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    read_until(&mut events, "event: live").await;

    let took = server.shut_down().await;
    let rest = read_to_close(&mut events).await;
    assert!(rest.contains("event: closing"), "{rest}");
    assert!(
        took < Duration::from_secs(30),
        "the stream held the server for the whole grace period"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_still_running_after_the_grace_period_is_dropped() {
    let server = start(|s| s.grace(Duration::from_millis(300))).await;
    let mut hanging = server.connect().await;
    hanging
        .write_all(b"GET /hang HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut half_head = server.connect().await;
    half_head
        .write_all(b"GET /healthcheck HTTP/1.1\r\nho")
        .await
        .unwrap();
    let mut half_body = server.connect().await;
    half_body
        .write_all(
            b"PUT /admin/drain HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
              content-length: 100\r\n\r\n{\"reason\":",
        )
        .await
        .unwrap();
    // Let the server take all three in before it is told to stop.
    tokio::time::sleep(Duration::from_millis(100)).await;

    let took = server.shut_down().await;
    assert!(took >= Duration::from_millis(300), "{took:?}");
    assert_eq!(
        read_to_close(&mut hanging).await,
        "",
        "dropped, not answered"
    );
    assert_eq!(read_to_close(&mut half_head).await, "");
    read_to_close(&mut half_body).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_head_is_closed_after_the_header_timeout() {
    let server = start(|s| {
        s.header_timeout(Duration::from_millis(200))
            .idle_timeout(Duration::from_secs(30))
    })
    .await;
    // Timed from before the connection is opened: the timeout may count from the accept
    // (hyper's header timer starts when it first waits for a head), never from earlier, so
    // this is a lower bound on a loaded machine too.
    let opened = Instant::now();
    let mut slow = server.connect().await;
    let mut quiet = server.connect().await;
    slow.write_all(b"GET /healthcheck/live HTTP/1.1\r\nho")
        .await
        .unwrap();
    assert_eq!(read_to_close(&mut slow).await, "");
    assert!(opened.elapsed() >= Duration::from_millis(200));

    // A connection that has sent nothing yet is idle, not slow: it is still served.
    assert!(get_live(&mut quiet).await.starts_with("HTTP/1.1 200"));
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let server = start(|s| s.idle_timeout(Duration::from_millis(300))).await;
    let mut stream = server.connect().await;
    // Kept alive after an answer, then idle. The server's idle time starts when it has
    // written the answer, before this side reads it: measured from the request's sending, to
    // the millisecond the server keeps it at.
    let sent = Instant::now();
    get_live(&mut stream).await;
    read_to_close(&mut stream).await;
    assert!(
        sent.elapsed() >= Duration::from_millis(299),
        "{:?}",
        sent.elapsed()
    );
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_the_longest_idle_connection_makes_room() {
    let server = start(|s| {
        s.max_connections(3)
            .max_connections_per_client(3)
            .grace(Duration::from_millis(100))
    })
    .await;
    let mut oldest = server.connect().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut busy = server.connect().await;
    busy.write_all(b"GET /hang HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let _newer = server.connect().await;
    tokio::time::sleep(Duration::from_millis(50)).await;

    let mut probe = server.connect().await;
    assert!(get_live(&mut probe).await.starts_with("HTTP/1.1 200"));
    assert_eq!(read_to_close(&mut oldest).await, "", "the oldest idle went");
    // The busy one is still there, waiting for its answer.
    let mut buf = [0u8; 1];
    assert!(
        timeout(Duration::from_millis(200), busy.read(&mut buf))
            .await
            .is_err(),
        "the busy connection was closed"
    );
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_slower_than_the_body_timeout_is_answered_408() {
    let server = start(|s| s.body_timeout(Duration::from_millis(200))).await;
    let mut stream = server.connect().await;
    stream
        .write_all(
            b"PUT /admin/drain HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
              content-type: application/json\r\ncontent-length: 100\r\n\r\n{\"reason\":",
        )
        .await
        .unwrap();
    let answer = read_to_close(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#"{"error":"#), "{answer}");
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_declared_body_is_refused_before_it_is_sent() {
    let server = start(|s| s).await;
    let mut stream = server.connect().await;
    stream
        .write_all(
            b"PUT /admin/drain HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
              content-type: application/json\r\ncontent-length: 1000000000\r\n\r\n",
        )
        .await
        .unwrap();
    let answer = read_until(&mut stream, "}").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains(r#"{"error":"#), "{answer}");
    server.shut_down().await;
}

/// One client whose requests' bodies never finish holds at most its share of the places:
/// past it each new connection of its own takes the place of its longest in a request, so
/// another client's probe is answered within a second, and the flood's own newest too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holding_slow_bodies_cannot_keep_another_out() {
    let server = start(|s| {
        s.max_connections(8)
            .max_connections_per_client(4)
            .body_timeout(Duration::from_secs(60))
    })
    .await;
    let mut slow = Vec::new();
    for _ in 0..8 {
        let mut stream = server.connect().await;
        // A head whole, a body that never ends: a request in progress.
        let _ = stream
            .write_all(
                b"PUT /admin/drain HTTP/1.1\r\nhost: x\r\nauthorization: Bearer t\r\n\
                  content-type: application/json\r\ncontent-length: 100\r\n\r\n{",
            )
            .await;
        slow.push(stream);
    }
    let mut closed = 0;
    for stream in &mut slow {
        let mut buf = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) = timeout(Duration::from_millis(300), stream.read(&mut buf)).await
        {
            closed += 1;
        }
    }
    assert_eq!(
        closed, 4,
        "past its share, a client's longest in a request made room"
    );
    let mut own = server.connect().await;
    let answer = timeout(Duration::from_secs(1), get_live(&mut own))
        .await
        .expect("the flood's own probe is answered within a second");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let mut probe = socket.connect(server.addr).await.unwrap();
    let answer = timeout(Duration::from_secs(1), get_live(&mut probe))
        .await
        .expect("another client's probe is answered within a second");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(slow);
    server.shut_down().await;
}
