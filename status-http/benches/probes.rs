//! What the probe routes cost in process, against a hello-world route of the same router
//! measured in the same run: a request through the router (`oneshot`) and its body read whole.
//! No socket, no kernel, no load generator: only the work the library adds, which wrk on a
//! shared two-core machine cannot resolve below about ±10 %.
//!
//! `cargo bench -p status-http --bench probes`
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::middleware::map_response;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use status_core::{check, CheckStatus, Dependency, Registry};
use status_http::middleware::HealthGateLayer;
use tower::ServiceExt;

async fn hello() -> &'static str {
    "Hello, World!"
}

/// The status routes over `dependencies` healthy dependencies, checked once, with `/hello`
/// and `/gated/hello` beside them, as an application mounts them.
async fn app(dependencies: usize) -> Router {
    let registry = Registry::builder().build();
    for i in 0..dependencies {
        let dependency = Dependency::builder(
            format!("dep-{i:04}"),
            check::tiered(|| async { (CheckStatus::Ok, "fine") }),
        )
        .period(Duration::from_secs(3600))
        .build()
        .expect("a valid dependency");
        registry.add(dependency).expect("a new id");
    }
    registry
        .add_group(
            status_core::Group::builder("first")
                .dependency("dep-0000")
                .build()
                .expect("a valid group"),
        )
        .expect("a known dependency");
    registry.refresh_all().await;
    Router::new()
        .route("/hello", get(hello))
        .route(
            "/gated/hello",
            get(hello).layer(HealthGateLayer::new(&registry)),
        )
        // What any layer on an axum route costs, to tell the gate's own work from it.
        .route(
            "/noop/hello",
            get(hello).layer(map_response(|r: Response| async { r })),
        )
        .merge(status_http::Routes::new(&registry).build())
}

async fn call(app: &Router, path: &str, accept_encoding: Option<&str>) -> usize {
    let mut request = Request::get(path);
    if let Some(coding) = accept_encoding {
        request = request.header("accept-encoding", coding);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).expect("a valid request"))
        .await
        .expect("infallible");
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    let body = response.into_body().collect().await.expect("a body");
    body.to_bytes().len()
}

fn probes(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    for dependencies in [5, 1000] {
        let app = runtime.block_on(app(dependencies));
        let mut group = c.benchmark_group(format!("probes_{dependencies}"));
        let routes: &[(&str, &str, Option<&str>)] = &[
            ("baseline_hello", "/hello", None),
            ("noop_layer_hello", "/noop/hello", None),
            ("gated_hello", "/gated/hello", None),
            ("live", "/healthcheck/live", None),
            ("summary", "/healthcheck/summary", None),
            ("group_summary", "/healthcheck/groups/first/summary", None),
            ("detailed_zstd", "/healthcheck", Some("zstd")),
            ("detailed_gzip", "/healthcheck", Some("gzip")),
        ];
        for &(name, path, coding) in routes {
            group.bench_function(name, |b| {
                b.to_async(&runtime)
                    .iter(|| async { black_box(call(&app, path, coding).await) });
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = probes
}
criterion_main!(benches);
