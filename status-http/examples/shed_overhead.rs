//! A server for measuring what the shedding layer costs an axum route at low load
//! (`BENCH_SECTIONS=shed scripts/bench-http`): the same hello-world handler bare and behind
//! the layer, on one router.
//!
//! - `/hello`: bare.
//! - `/hello-shed`: behind [`traffic::shedding`] put on the route with `MethodRouter::layer`,
//!   the one-line way.
//! - `/hello-shed-service`: behind the same layer stack put around the handler's service and
//!   routed with `Router::route_service`.
//! - `/hello-noop`: behind axum's no-op `map_response`, what any layer on a route costs.
//!
//! Usage: `cargo run --release -p status-http --example shed_overhead -- PORT`

use axum::handler::HandlerWithoutStateExt;
use axum::middleware::map_response;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use status_http::traffic;
use status_traffic::limit::{Gradient2, Limiter};
use status_traffic::shed::ShedLayer;
use tower::Layer;

async fn hello() -> &'static str {
    "Hello, World!"
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(18095);
    let shed = || ShedLayer::new(Limiter::new(Gradient2::default()));
    let app = Router::new()
        .route("/hello", get(hello))
        .route("/hello-shed", get(hello).layer(traffic::shedding(shed())))
        .route_service(
            "/hello-shed-service",
            traffic::shedding(shed()).layer(hello.into_service()),
        )
        .route(
            "/hello-noop",
            get(hello).layer(map_response(|r: Response| async { r })),
        );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    status_http::serve(listener, app).await
}
