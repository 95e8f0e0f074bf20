//! What choosing a node costs: a call through a pool of 3, 30 and 300 nodes that answer at
//! once (the fill order or the shuffle, the cascade's lease, the outcome recorded), with the
//! default selection and with the weighted order alone (`spread`, no holds), against one
//! node's service called bare, measured in the same run; and a full weighted order of the nodes (what the
//! simulator asks for; a call draws only as far as the cascade goes).
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use status_core::Rng;
use status_traffic::limit::{Fixed, Limiter};
use status_traffic::pool::{Pool, Selector};
use tower::ServiceExt;

fn choose(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let node = tower::service_fn(|x: u64| async move { Ok::<_, Infallible>(x) });
    let mut group = c.benchmark_group("pool");
    group.bench_function("baseline_one_node_bare", |b| {
        b.to_async(&runtime)
            .iter(|| async { node.oneshot(black_box(1)).await.unwrap() });
    });
    for n in [3, 30, 300] {
        let pool = Pool::builder(Rng::new(1))
            .limiter(|| Limiter::new(Fixed::new(1_000)))
            .build();
        for i in 0..n {
            pool.add(format!("node-{i}"), node);
        }
        group.bench_with_input(
            BenchmarkId::new("call_through_pool", n),
            &pool,
            |b, pool| {
                b.to_async(&runtime)
                    .iter(|| async { pool.clone().oneshot(black_box(1)).await.unwrap() });
            },
        );
        // The weighted order alone, as every call chose before the fill order and holds.
        let spread = Pool::builder(Rng::new(1))
            .limiter(|| Limiter::new(Fixed::new(1_000)))
            .spread()
            .hold(Duration::ZERO, 0.5)
            .build();
        for i in 0..n {
            spread.add(format!("node-{i}"), node);
        }
        group.bench_with_input(
            BenchmarkId::new("call_through_pool_spread", n),
            &spread,
            |b, pool| {
                b.to_async(&runtime)
                    .iter(|| async { pool.clone().oneshot(black_box(1)).await.unwrap() });
            },
        );
        let mut selector = Selector::new();
        for i in 0..n {
            selector.add(i);
        }
        let mut rng = Rng::new(2);
        let mut order = Vec::with_capacity(n);
        let now = Duration::from_secs(1);
        group.bench_function(BenchmarkId::new("full_order", n), |b| {
            b.iter(|| {
                selector.order(black_box(now), &mut rng, &mut order);
                order[0]
            });
        });
    }
    group.finish();
}

criterion_group!(benches, choose);
criterion_main!(benches);
