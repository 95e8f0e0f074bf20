//! How long each scenario takes to build and run its requests (100,000 for the study's),
//! against a baseline measured in the same run: 100,000 requests to a bare server (the event
//! queue, the load and the statistics, no topology).
// criterion's macros generate undocumented functions.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use status_sim::scenario::{self, REQUESTS};
use status_sim::{summarize, Load, Sim};

fn scenarios(c: &mut Criterion) {
    let mut group = c.benchmark_group("scenario");
    group.sample_size(10);
    group.bench_function("baseline-bare-server", |b| {
        b.iter(|| {
            let mut sim = Sim::new(1);
            let server = sim.server();
            summarize(&sim.run(server, &Load::poisson(REQUESTS, scenario::MEAN_GAP)))
        });
    });
    for s in scenario::all() {
        group.bench_function(s.name, |b| b.iter(|| s.run(1, REQUESTS)));
    }
    group.finish();
}

criterion_group!(benches, scenarios);
criterion_main!(benches);
