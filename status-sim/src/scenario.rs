//! The routing study's scenarios (Kingsbury, "Timelike 2: everything fails all the time"), and
//! ours over the same fleet: the node pool's cascade, power of two choices, self-culling, and
//! a burst against one queueing server with and without the shedding admission.
//!
//! A "dyno" is `cable 2 → queue-exclusive → delay-fixed 20 → delay-exponential 100 → server`:
//! a single-threaded server 2 ms away that takes 20 ms plus an exponential 100 ms on average.
//! A "faulty dyno" has `faulty 20000 1000` after its cable: up for 20 s on average, then down
//! for 1 s, so up about 95 % of the time. The load is 100,000 requests with exponential gaps
//! of 1.5 ms (about 667 a second, a third of 250 dynos' capacity).

use std::time::{Duration, Instant};

use status_traffic::hedge::HedgeSettings;
use status_traffic::limit::LimitChoice;

use crate::{summarize, CullSettings, Gap, Load, MinConn, Ms, NodeId, ShedSettings, Sim, Summary};

/// Dynos in the study's fleet.
pub const DYNOS: usize = 250;
/// Requests in each of the study's runs.
pub const REQUESTS: u64 = 100_000;
/// The mean gap between requests, in ms.
pub const MEAN_GAP: f64 = 1.5;

/// One scenario: a topology and a load.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// Its name, as `--scenario` takes it.
    pub name: &'static str,
    /// What it is, in a line.
    pub about: &'static str,
    /// Builds the topology into a simulation and answers its root.
    build: fn(&mut Sim) -> NodeId,
    /// The study's Poisson load, or the burst (which keeps its shape whatever `requests`).
    burst: bool,
}

/// One scenario's run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Its statistics.
    pub summary: Summary,
    /// The latencies of the measured requests, ascending (for charts).
    pub latencies: Vec<Ms>,
    /// Second copies sent by hedge nodes, as a share of the requests: the extra load hedging
    /// cost (0 without hedging).
    pub extra_load: f64,
    /// Wall-clock time it took to build and run (the only thing a seed does not fix).
    pub wall: Duration,
}

impl Scenario {
    /// Runs it with `seed` and `requests` (the study's scenarios; see [`REQUESTS`]).
    #[must_use]
    pub fn run(&self, seed: u64, requests: u64) -> Run {
        let load = if self.burst {
            burst_load()
        } else {
            Load::poisson(requests, MEAN_GAP)
        };
        measure(self.name, seed, &load, self.build)
    }
}

/// Builds a topology with `build` in a simulation seeded with `seed`, runs `load` against
/// it and measures it as the scenarios are measured, under `name`.
pub fn measure(name: &str, seed: u64, load: &Load, build: impl FnOnce(&mut Sim) -> NodeId) -> Run {
    let started = Instant::now();
    let mut sim = Sim::new(seed);
    let root = build(&mut sim);
    let records = sim.run(root, load);
    let summary = summarize(&records);
    let mut latencies: Vec<Ms> = crate::select_middle_half(&records)
        .iter()
        .map(crate::Record::latency)
        .collect();
    latencies.sort_unstable();
    #[allow(clippy::cast_precision_loss)]
    let extra_load = sim.hedged() as f64 / records.len().max(1) as f64;
    Run {
        scenario: name.to_owned(),
        seed,
        summary,
        latencies,
        extra_load,
        wall: started.elapsed(),
    }
}

/// A scenario under the study's load.
const fn study(name: &'static str, about: &'static str, build: fn(&mut Sim) -> NodeId) -> Scenario {
    Scenario {
        name,
        about,
        build,
        burst: false,
    }
}

/// Every scenario, the study's first.
#[must_use]
pub fn all() -> Vec<Scenario> {
    vec![
        study("ideal-min-conn", "min-conn over 250 dynos that never fail", |sim| {
            let dynos = sim.pool(DYNOS, dyno);
            sim.min_conn(MinConn::default(), &dynos)
        }),
        study("faulty-min-conn", "min-conn over 250 faulty dynos", |sim| {
            let dynos = sim.pool(DYNOS, faulty_dyno);
            sim.min_conn(MinConn::default(), &dynos)
        }),
        study(
            "faulty-min-conn-hold",
            "min-conn holding an erring dyno's connection for 1 s",
            |sim| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                sim.min_conn(HOLD, &dynos)
            },
        ),
        study(
            "faulty-retry-min-conn-hold",
            "3 attempts over min-conn with the hold",
            |sim| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let lb = sim.min_conn(HOLD, &dynos);
                sim.retry(3, lb)
            },
        ),
        study(
            "random-lbs-one-pool",
            "random over 10 faulty balancers (3 attempts, min-conn, hold) sharing 250 dynos",
            |sim| one_pool(sim, 1),
        ),
        study("retry-random-lbs-one-pool", "3 attempts over the above", |sim| {
            one_pool(sim, 3)
        }),
        study(
            "retry-random-lbs-ten-pools",
            "3 attempts over random over 10 faulty balancers, each with its own 25 dynos",
            |sim| {
                let lbs = sim.pool(10, |sim| {
                    let dynos = sim.pool(DYNOS / 10, faulty_dyno);
                    faulty_balancer(sim, &dynos)
                });
                let random = sim.random(&lbs);
                sim.retry(3, random)
            },
        ),
        study(
            "faulty-cascade",
            "status-traffic's node pool with its defaults (idle dynos filled in a turning order, \
             a 5 s hold after a failure, the success-weighted cascade, Gradient2 per dyno)",
            |sim| cascade(sim, 1, LimitChoice::Gradient2),
        ),
        study(
            "faulty-cascade-spread",
            "the node pool choosing as it did before: the success-weighted cascade alone \
             (spread, no hold)",
            |sim| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let settings = crate::CascadeSettings {
                    spread: true,
                    hold: 0,
                    ..crate::CascadeSettings::default()
                };
                sim.cascade_with(LimitChoice::Gradient2, settings, &dynos)
            },
        ),
        study("faulty-retry-cascade", "3 attempts over the node pool", |sim| {
            cascade(sim, 3, LimitChoice::Gradient2)
        }),
        study(
            "faulty-retry-cascade-fixed-1",
            "3 attempts over the node pool, each dyno's limit fixed at its concurrency (1)",
            |sim| cascade(sim, 3, LimitChoice::Fixed(1)),
        ),
        study(
            "hedge-ideal-min-conn",
            "hedged past the 95th percentile (budget 10 %) over min-conn and 250 dynos",
            |sim| {
                let dynos = sim.pool(DYNOS, dyno);
                let lb = sim.min_conn(MinConn::default(), &dynos);
                sim.hedge(HedgeSettings::default(), lb)
            },
        ),
        study(
            "hedge-faulty-min-conn-hold",
            "hedged past the 95th percentile (budget 10 %) over min-conn, hold 1000, and 250 \
             faulty dynos",
            |sim| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let lb = sim.min_conn(HOLD, &dynos);
                sim.hedge(HedgeSettings::default(), lb)
            },
        ),
        study(
            "hedge-faulty-cascade",
            "hedged past the 95th percentile (budget 10 %) over the node pool and 250 faulty \
             dynos",
            |sim| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let pool = sim.cascade(LimitChoice::Gradient2, &dynos);
                sim.hedge(HedgeSettings::default(), pool)
            },
        ),
        study(
            "faulty-p2c",
            "power of two choices by outstanding requests",
            |sim| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                sim.balancer(crate::Balance::PowerOfTwo, &dynos)
            },
        ),
        study(
            "faulty-cull-min-conn",
            "min-conn over dynos that cull themselves (10 errors in 5 s; 25 culls per 10 s fleet-wide; back after 2 s)",
            |sim| culling(sim, 25),
        ),
        study(
            "faulty-cull-min-conn-ample",
            "the same with a budget of 250 culls per 10 s",
            |sim| culling(sim, 250),
        ),
        Scenario {
            name: "burst-unprotected",
            about: "one server, 8 workers, 300 ms of work; 20 req/s, 5 s at 100 req/s, 20 req/s",
            build: worker_server,
            burst: true,
        },
        Scenario {
            name: "burst-shed",
            about: "the same behind the shedding admission (Gradient2, queue 24, 1 s queue timeout, 2 s deadline)",
            build: |sim| {
                let server = worker_server(sim);
                sim.shed(
                    ShedSettings {
                        queue: 24,
                        ..ShedSettings::default()
                    },
                    server,
                )
            },
            burst: true,
        },
    ]
}

/// `attempts` over random over 10 faulty balancers sharing one pool of 250 faulty dynos.
fn one_pool(sim: &mut Sim, attempts: u32) -> NodeId {
    let dynos = sim.pool(DYNOS, faulty_dyno);
    let lbs = sim.pool(10, |sim| faulty_balancer(sim, &dynos));
    let random = sim.random(&lbs);
    sim.retry(attempts, random)
}

/// `attempts` over the node pool over 250 faulty dynos, each with a limiter of `limit`.
fn cascade(sim: &mut Sim, attempts: u32, limit: LimitChoice) -> NodeId {
    let dynos = sim.pool(DYNOS, faulty_dyno);
    let pool = sim.cascade(limit, &dynos);
    sim.retry(attempts, pool)
}

/// Min-conn over 250 faulty dynos that cull themselves within a budget of `capacity` per
/// 10 s, their culler looking every 100 ms.
fn culling(sim: &mut Sim, capacity: u64) -> NodeId {
    let budget = sim.budget(capacity, 10_000);
    let settings = CullSettings {
        interval: 100,
        ..CullSettings::default()
    };
    let dynos = sim.pool(DYNOS, |sim| {
        let dyno = faulty_dyno(sim);
        sim.cull(settings, budget, dyno)
    });
    sim.min_conn(MinConn::default(), &dynos)
}

/// The scenario named `name`.
#[must_use]
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}

const HOLD: MinConn = MinConn {
    random_ties: false,
    error_hold: 1000,
};

/// `cable 2 → queue-exclusive → delay-fixed 20 → delay-exponential 100 → server`.
pub fn dyno(sim: &mut Sim) -> NodeId {
    let server = sim.server();
    let work = sim.delay_exponential(100.0, server);
    let overhead = sim.delay_fixed(20, work);
    let queue = sim.queue_exclusive(overhead);
    sim.cable(2, queue)
}

/// `cable 2 → faulty 20000 1000 → queue-exclusive → delay-fixed 20 → delay-exponential 100 →
/// server`.
pub fn faulty_dyno(sim: &mut Sim) -> NodeId {
    let server = sim.server();
    let work = sim.delay_exponential(100.0, server);
    let overhead = sim.delay_fixed(20, work);
    let queue = sim.queue_exclusive(overhead);
    let faulty = sim.faulty(20_000.0, 1_000.0, queue);
    sim.cable(2, faulty)
}

/// `cable 5 → faulty 20000 1000 → retry 3 → min-conn (hold 1000)` over `dynos`: one of the
/// study's distributed balancers, itself faulty.
fn faulty_balancer(sim: &mut Sim, dynos: &[NodeId]) -> NodeId {
    let lb = sim.min_conn(HOLD, dynos);
    let retry = sim.retry(3, lb);
    let faulty = sim.faulty(20_000.0, 1_000.0, retry);
    sim.cable(5, faulty)
}

/// `queue-fixed-concurrency 8 → delay-fixed 300 → server`: the load-shedding seed's server,
/// capacity 26.7 requests a second.
fn worker_server(sim: &mut Sim) -> NodeId {
    let server = sim.server();
    let work = sim.delay_fixed(300, server);
    sim.queue_fixed_concurrency(8, work)
}

/// 15 s at 20 requests a second, 5 s at 100, 30 s at 20.
fn burst_load() -> Load {
    Load::phases([
        (300, Gap::Exponential(50.0)),
        (500, Gap::Exponential(10.0)),
        (600, Gap::Exponential(50.0)),
    ])
}
