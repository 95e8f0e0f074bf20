//! How long each scenario takes to build and run 100,000 requests.
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use status_sim::scenario::{self, REQUESTS};

fn scenarios(c: &mut Criterion) {
    let mut group = c.benchmark_group("scenario");
    group.sample_size(10);
    for s in scenario::all() {
        group.bench_function(s.name, |b| b.iter(|| s.run(1, REQUESTS)));
    }
    group.finish();
}

criterion_group!(benches, scenarios);
criterion_main!(benches);
