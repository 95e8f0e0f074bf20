//! A server for measuring what the size of a body costs on this machine, whatever made it
//! (`BENCH_SECTIONS=scale scripts/bench-http`): the ceiling a probe that answers `n` bytes can
//! reach against a hello-world route, with nothing computed per request.
//!
//! - `/hello`: a 13-byte body.
//! - `/bytes/{n}`: `n` bytes (at most a mebibyte) sliced from one buffer made at startup, so
//!   a request costs a reference count and the bytes' way through the server and the kernel.
//!
//! Usage: `cargo run --release -p status-http --example body_size -- PORT`

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::get;
use axum::Router;

/// The largest body served.
const MAX: usize = 1 << 20;

async fn hello() -> &'static str {
    "Hello, World!"
}

async fn bytes(State(all): State<Arc<Bytes>>, Path(n): Path<usize>) -> Bytes {
    all.slice(..n.min(MAX))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(18096);
    // Bytes that do not compress, in case anything on the way tries.
    let mut rng = status_core::Rng::new(1);
    let all: Vec<u8> = (0..MAX).map(|_| rng.next_u64() as u8).collect();
    let app = Router::new()
        .route("/hello", get(hello))
        .route("/bytes/{n}", get(bytes))
        .with_state(Arc::new(Bytes::from(all)));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    status_http::serve(listener, app).await
}
