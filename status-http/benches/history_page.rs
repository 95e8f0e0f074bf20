//! What the history page costs the server at 1,000 dependencies: `GET /status/history` with
//! 90 day tiles each, through the router (`oneshot`), against `/healthcheck/live` of the same
//! router in the same run: as served (the past days kept, today's read), and for a span not
//! kept (every day read from the store and drawn), and the store's read alone.
//!
//! `cargo bench -p status-http --bench history_page`
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::BodyExt;
use status_core::{Dependency, Registry};
use status_history::{Bucket, History, Series, Spent, SqliteStore, Writes};
use tower::ServiceExt;

const DEPENDENCIES: usize = 1000;

/// 90 days of every dependency in a file: a bucket a day holding the day (rolled up to the
/// day tier as the driver's minutes are).
fn year_file() -> std::path::PathBuf {
    let dir =
        std::env::temp_dir().join(format!("status-history-page-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history.db");
    let now = chrono::Utc::now().timestamp();
    let today = now - now.rem_euclid(86_400);
    let mut store = SqliteStore::open(&path, now * 1000).unwrap().store;
    for day in 0..90 {
        let start = today - day * 86_400;
        let mut writes = Writes::default();
        for i in 0..DEPENDENCIES {
            let outage = if (i as i64 + day) % 37 == 0 {
                600_000
            } else {
                0
            };
            writes.batch.minutes.push((
                Series::Dependency(format!("dep-{i:04}")),
                Bucket {
                    start,
                    spent: Spent {
                        ok: 86_400_000 - outage,
                        outage,
                        ..Spent::default()
                    },
                    checks: 86_400,
                    ..Bucket::empty(start)
                },
            ));
        }
        store.write(&writes).unwrap();
    }
    path
}

fn history_page(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let path = year_file();
    let (app, _registry, _history): (Router, Registry, History) = runtime.block_on(async {
        let registry = Registry::new();
        for i in 0..DEPENDENCIES {
            registry
                .add_passive(
                    Dependency::passive(format!("dep-{i:04}"))
                        .build_info()
                        .unwrap(),
                )
                .unwrap();
        }
        let history = History::sqlite(&path).open();
        history.attach(&registry);
        history.restored().await;
        let app = status_http::Routes::new(&registry)
            .history(history.clone())
            .build();
        (app, registry, history)
    });
    let call = |uri: &'static str| {
        let app = app.clone();
        async move {
            let response = app
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert!(
                response.status().is_success(),
                "{uri}: {}",
                response.status()
            );
            response
                .into_body()
                .collect()
                .await
                .unwrap()
                .to_bytes()
                .len()
        }
    };
    let size = runtime.block_on(call("/status/history?limit=1000"));
    assert!(size > 1_000_000, "{size} bytes");
    let mut group = c.benchmark_group("history page, 1,000 dependencies");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("GET /healthcheck/live (baseline)", |b| {
        b.to_async(&runtime).iter(|| call("/healthcheck/live"));
    });
    group.bench_function("GET /status/history?limit=1000 (90 tiles each)", |b| {
        b.to_async(&runtime)
            .iter(|| call("/status/history?limit=1000"));
    });
    group.bench_function(
        "GET /status/history?limit=1000&days=89 (a span not kept: all read and drawn)",
        |b| {
            b.to_async(&runtime)
                .iter(|| call("/status/history?limit=1000&days=89"));
        },
    );
    group.bench_function("the read alone: History::days_of, 1,000 × 90 days", |b| {
        b.to_async(&runtime).iter(|| async {
            let rows = _history.days_of("dependency", 90).await.unwrap();
            assert!(rows.len() >= DEPENDENCIES);
        });
    });
    group.bench_function("GET /status/history (a page of 100)", |b| {
        b.to_async(&runtime).iter(|| call("/status/history"));
    });
    group.finish();
    println!("the page of 1,000 dependencies is {size} bytes");
}

criterion_group!(benches, history_page);
criterion_main!(benches);
