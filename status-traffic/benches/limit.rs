//! What a lease costs: acquire and release under each algorithm, against an uncontended
//! `Mutex` lock and unlock measured in the same run.
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use status_traffic::limit::{Aimd, Fixed, Gradient2, Limiter, Vegas};

fn lease(c: &mut Criterion) {
    let mut group = c.benchmark_group("lease");
    let mutex = Mutex::new(0u64);
    group.bench_function("baseline_mutex_lock_unlock", |b| {
        b.iter(|| *black_box(&mutex).lock().unwrap() += 1);
    });
    for (name, limiter) in [
        ("fixed", Limiter::new(Fixed::new(100))),
        ("aimd", Limiter::new(Aimd::default())),
        ("gradient2", Limiter::new(Gradient2::default())),
        ("vegas", Limiter::new(Vegas::default())),
    ] {
        let mut now = Duration::ZERO;
        group.bench_function(format!("{name}_acquire_success"), |b| {
            b.iter(|| {
                let lease = limiter.try_acquire(now).unwrap();
                now += Duration::from_micros(100);
                lease.success(black_box(now));
            });
        });
    }
    group.finish();
}

/// A request through the whole layer (admission, deadline, lease, release) to a service that
/// answers at once, against the same service called bare, on a current-thread runtime.
fn layer(c: &mut Criterion) {
    use status_traffic::shed::ShedLayer;
    use tower::{Layer, ServiceExt};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let bare = tower::service_fn(|x: u64| async move { Ok::<_, std::convert::Infallible>(x) });
    let _guard = runtime.enter();
    let shed = ShedLayer::new(Limiter::new(Gradient2::default())).layer(bare);
    let mut group = c.benchmark_group("layer");
    group.bench_function("baseline_bare_service", |b| {
        b.to_async(&runtime)
            .iter(|| async { bare.oneshot(black_box(1)).await.unwrap() });
    });
    group.bench_function("behind_the_shedding_layer", |b| {
        b.to_async(&runtime)
            .iter(|| async { shed.clone().oneshot(black_box(1)).await.unwrap() });
    });
    group.finish();
}

criterion_group!(benches, lease, layer);
criterion_main!(benches);
