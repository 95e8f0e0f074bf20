//! Benchmarks of the engine's hot paths: `cargo bench -p status-core --bench engine`.

// criterion's macros generate public functions without docs.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use status_core::{check, CheckStatus, Dependency, Feature, Registry, Urgency};
use tokio::runtime::Runtime;

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A registry of `n` dependencies whose checks take `delay`, checked once.
fn registry(rt: &Runtime, n: usize, delay: Duration) -> Registry {
    rt.block_on(async {
        let registry = Registry::builder().appname("bench").build();
        for i in 0..n {
            let urgency = Urgency::ALL[i % 4];
            let dependency = Dependency::builder(
                format!("dep-{i}"),
                check::ping(move || async move {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Ok::<_, std::io::Error>(())
                }),
            )
            .urgency(urgency)
            .period(Duration::from_secs(3600))
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
            registry.add(dependency).unwrap();
        }
        registry.refresh_all().await;
        registry
    })
}

fn is_enabled(c: &mut Criterion) {
    let rt = runtime();
    let registry = registry(&rt, 1, Duration::ZERO);
    let feature = rt.block_on(async {
        registry
            .add_feature(
                Feature::builder("feature")
                    .requires("dep-0", CheckStatus::Minor)
                    .build()
                    .unwrap(),
            )
            .unwrap()
    });
    let plain = std::sync::atomic::AtomicBool::new(true);
    let mut group = c.benchmark_group("feature");
    group.bench_function("is_enabled", |b| {
        b.iter(|| black_box(&feature).is_enabled());
    });
    // Baseline: a bare atomic load, the floor is_enabled is measured against.
    group.bench_function("baseline_atomic_load", |b| {
        b.iter(|| black_box(&plain).load(std::sync::atomic::Ordering::Acquire));
    });
    group.finish();
}

fn cached_report(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("report");
    for n in [10, 1_000, 10_000] {
        let registry = registry(&rt, n, Duration::ZERO);
        let _enter = rt.enter();
        group.bench_with_input(BenchmarkId::new("cached", n), &n, |b, _| {
            b.iter(|| black_box(registry.report()));
        });
        group.bench_with_input(
            BenchmarkId::new("serialize_detailed_json", n),
            &n,
            |b, _| {
                let report = registry.report();
                b.iter(|| serde_json::to_vec(black_box(&*report)).unwrap());
            },
        );
        group.bench_with_input(BenchmarkId::new("one_result", n), &n, |b, _| {
            b.iter(|| black_box(registry.result("dep-1")));
        });
    }
    group.finish();
}

fn evaluate(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("evaluate_50ms_checks");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    for n in [1, 10_000] {
        let registry = registry(&rt, n, Duration::from_millis(50));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.to_async(&rt).iter(|| registry.refresh_all());
        });
    }
    group.finish();
}

criterion_group!(benches, is_enabled, cached_report, evaluate);
criterion_main!(benches);
