//! An HTTP/1.1 client for the tests, over hyper.

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Sends one request to `addr` and reads the whole answer.
pub(crate) async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    request_with(addr, method, path, token, body, &[]).await
}

/// [`request`] with more headers.
pub(crate) async fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// A GET of `path` on `addr`: the status, and the body as JSON (`Null` when it is not).
#[allow(dead_code)] // Not every test binary asks for JSON.
pub(crate) async fn get_json(addr: SocketAddr, path: &str) -> (u16, serde_json::Value) {
    let (status, body) = request(addr, "GET", path, None, "").await;
    (
        status,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    )
}

/// Polls `ok` every 50 ms until it holds, for at most 20 s.
#[allow(dead_code)] // Not every test binary waits on a process.
pub(crate) async fn until(addr: SocketAddr, what: &str, ok: impl AsyncFn() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ok().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{addr}: {what} never held"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// An empty directory of this test process's own under the system's temporary one, named
/// `name`: where a test keeps its history file.
#[allow(dead_code)] // Not every test binary keeps a history.
pub(crate) fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Sets the chaos of the demo dependency `dependency` of the quickstart at `addr` (`ok`,
/// `outage`, …) with the admin token `t`.
#[allow(dead_code)] // Not every test binary drives chaos.
pub(crate) async fn chaos(addr: SocketAddr, dependency: &str, mode: &str) {
    let (status, body) = request(
        addr,
        "PUT",
        &format!("/demo/chaos/{dependency}"),
        Some("t"),
        &format!(r#"{{"mode":"{mode}"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// Where a webhook receiver listens, and every JSON body it got.
#[allow(dead_code)] // Not every test binary receives notifications.
pub(crate) type Received = std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>;

/// A webhook receiver on loopback recording every JSON body it gets: its URL, and them.
#[allow(dead_code)] // Not every test binary receives notifications.
pub(crate) async fn receiver() -> (String, Received) {
    let got: Received = std::sync::Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let store = std::sync::Arc::clone(&got);
    let hook = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            store
                .lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap());
            axum::http::StatusCode::NO_CONTENT
        }),
    );
    tokio::spawn(async move { axum::serve(listener, hook).await });
    (url, got)
}
