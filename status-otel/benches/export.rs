//! What the OTLP export costs: one collection of 1,000 dependencies (the gauges read from the
//! report, the histograms and counters of their check runs), encoded as protobuf and sent to
//! a collector on loopback that answers at once; against the same registry's Prometheus
//! scrape (`GET /metrics` through the router), measured in the same run. At one export every
//! 10 s, the share of a core is the time of one export over 10 s.
//!
//! `cargo bench -p status-otel --bench export`
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::post;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use status_core::{check, CheckStatus, Dependency, Group, Registry};
use status_otel::Otlp;
use tower::ServiceExt;

const DEPENDENCIES: usize = 1_000;

/// A collector that takes every body and answers 200 at once.
async fn collector() -> String {
    let app = Router::new()
        .route(
            "/v1/metrics",
            post(|_: axum::body::Bytes| async { StatusCode::OK }),
        )
        .route(
            "/v1/logs",
            post(|_: axum::body::Bytes| async { StatusCode::OK }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// 1,000 dependencies in 20 groups, each checked three times.
async fn registry() -> Registry {
    let registry = Registry::builder().jitter(0.0).build();
    for i in 0..DEPENDENCIES {
        let dependency = Dependency::builder(
            format!("dep-{i:04}"),
            check::tiered(|| async { (CheckStatus::Ok, "fine") }),
        )
        .kind("bench")
        .period(Duration::from_secs(3600))
        .build()
        .unwrap();
        registry.add(dependency).unwrap();
    }
    for g in 0..20 {
        let mut group = Group::builder(format!("group-{g:02}"));
        for i in (g..DEPENDENCIES).step_by(20) {
            group = group.dependency(format!("dep-{i:04}"));
        }
        registry.add_group(group.build().unwrap()).unwrap();
    }
    registry
}

fn export(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (otlp, app) = runtime.block_on(async {
        let endpoint = collector().await;
        let registry = registry().await;
        let otlp = Otlp::builder()
            .endpoint(endpoint)
            .interval(Duration::from_secs(3600))
            .dependency(false)
            .start(&registry)
            .unwrap();
        for _ in 0..3 {
            registry.refresh_all().await;
        }
        // The listener records on its own thread: let it catch up.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let app = status_http::Routes::new(&registry).build();
        (otlp, app)
    });
    let mut group = c.benchmark_group("1000 dependencies");
    group.sample_size(30);
    group.bench_function("prometheus scrape (baseline)", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let response = app
                    .clone()
                    .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
                    .await
                    .unwrap();
                response
                    .into_body()
                    .collect()
                    .await
                    .unwrap()
                    .to_bytes()
                    .len()
            })
        });
    });
    group.bench_function("otlp export", |b| {
        b.iter(|| otlp.flush_metrics().unwrap());
    });
    group.finish();
    let stats = otlp.stats();
    assert_eq!(
        stats.failed,
        [0, 0, 0],
        "every export was accepted: {stats:?}"
    );
    otlp.shutdown();
}

criterion_group!(benches, export);
criterion_main!(benches);
