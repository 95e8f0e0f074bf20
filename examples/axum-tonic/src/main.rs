//! Run with `cargo run -p axum-tonic -- --http 127.0.0.1:8080 --grpc 127.0.0.1:50051`.
//!
//! An application with an axum server (its own route, and status's probes, admin API and
//! dashboard) and a tonic server (gRPC health, beside any services of its own), both
//! answering probes from one `status_core::Probes`, and both stopped by one SIGTERM:
//! readiness fails at once on both (the shutdown delay, for balancers to notice), then both
//! servers stop taking connections, finish what is in progress within the grace, and the
//! process exits 0.

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use futures::FutureExt;
use status_core::{check, Dependency, Probes, Registry, Urgency};
use status_grpc::tonic;

/// How long readiness fails before the servers stop, and how long requests in progress may
/// run after that.
const DELAY: Duration = Duration::from_secs(2);
const GRACE: Duration = Duration::from_secs(3);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let (http, grpc) = addresses()?;

    let registry = Registry::new();
    registry.add(
        Dependency::builder(
            "database",
            check::ping(|| async { Ok::<_, std::io::Error>(()) }),
        )
        .urgency(Urgency::Required)
        .period(Duration::from_secs(5))
        .build()?,
    )?;
    // One composition of the probes' verdicts, for both transports.
    let probes = Probes::new(&registry);

    // One signal for both servers: SIGTERM or Ctrl-C fails readiness for DELAY, then ends.
    // `shared` lets each server await the same future.
    let stop = status_http::shutdown::graceful(&registry, DELAY).shared();

    let app = axum::Router::new()
        .route("/hello", axum::routing::get(|| async { "hello" }))
        .merge(
            status_http::Routes::new(&registry)
                .probes(probes.clone())
                .build(),
        );
    let http_listener = tokio::net::TcpListener::bind(http)
        .await
        .with_context(|| format!("cannot listen on {http}"))?;
    let http_server = status_http::serve(http_listener, app)
        .with_graceful_shutdown(stop.clone())
        .grace(GRACE);

    let health = status_grpc::HealthService::new(&registry)
        .probes(probes)
        .shutdown_grace(DELAY);
    // Your own services: `.add_service(...)` on these routes.
    let routes = tonic::service::Routes::new(health.into_server());
    let grpc_listener = tokio::net::TcpListener::bind(grpc)
        .await
        .with_context(|| format!("cannot listen on {grpc}"))?;
    let grpc_server = status_grpc::serve(grpc_listener, routes)
        .with_graceful_shutdown(stop)
        .grace(GRACE);

    println!("http://{http}/healthcheck and grpc://{grpc} (grpc.health.v1.Health)");
    // Both run until the one signal has stopped both.
    let (http_done, grpc_done) = tokio::join!(http_server.into_future(), grpc_server.into_future());
    http_done.context("the HTTP server")?;
    grpc_done.context("the gRPC server")?;
    tracing::info!("both servers stopped");
    Ok(())
}

/// `--http ADDR --grpc ADDR` (defaults 127.0.0.1:8080 and 127.0.0.1:50051).
fn addresses() -> anyhow::Result<(SocketAddr, SocketAddr)> {
    let mut http: SocketAddr = "127.0.0.1:8080".parse()?;
    let mut grpc: SocketAddr = "127.0.0.1:50051".parse()?;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs an address"))?;
        match flag.as_str() {
            "--http" => http = value.parse().context("--http")?,
            "--grpc" => grpc = value.parse().context("--grpc")?,
            other => anyhow::bail!("unknown flag {other}: --http ADDR --grpc ADDR"),
        }
    }
    Ok((http, grpc))
}
