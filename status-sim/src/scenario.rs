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

use status_traffic::limit::{Fixed, Gradient2, Limiter};

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
    /// Builds the topology into a simulation and answers its root and load; `requests`
    /// overrides the study's 100,000 (the burst scenarios keep their shape).
    build: fn(&mut Sim, u64) -> (NodeId, Load),
}

/// One scenario's run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The scenario's name.
    pub scenario: &'static str,
    /// The seed.
    pub seed: u64,
    /// Its statistics.
    pub summary: Summary,
    /// The latencies of the measured requests, ascending (for charts).
    pub latencies: Vec<Ms>,
    /// Wall-clock time it took to build and run (the only thing a seed does not fix).
    pub wall: Duration,
}

impl Scenario {
    /// Runs it with `seed` and `requests` (the study's scenarios; see [`REQUESTS`]).
    #[must_use]
    pub fn run(&self, seed: u64, requests: u64) -> Run {
        let started = Instant::now();
        let mut sim = Sim::new(seed);
        let (root, load) = (self.build)(&mut sim, requests);
        let records = sim.run(root, &load);
        let summary = summarize(&records);
        let mut latencies: Vec<Ms> = crate::select_middle_half(&records)
            .iter()
            .map(crate::Record::latency)
            .collect();
        latencies.sort_unstable();
        Run {
            scenario: self.name,
            seed,
            summary,
            latencies,
            wall: started.elapsed(),
        }
    }
}

/// Every scenario, the study's first.
#[must_use]
pub fn all() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "ideal-min-conn",
            about: "min-conn over 250 dynos that never fail",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, dyno);
                (sim.min_conn(MinConn::default(), &dynos), study_load(n))
            },
        },
        Scenario {
            name: "faulty-min-conn",
            about: "min-conn over 250 faulty dynos",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                (sim.min_conn(MinConn::default(), &dynos), study_load(n))
            },
        },
        Scenario {
            name: "faulty-min-conn-hold",
            about: "min-conn holding an erring dyno's connection for 1 s",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                (sim.min_conn(HOLD, &dynos), study_load(n))
            },
        },
        Scenario {
            name: "faulty-retry-min-conn-hold",
            about: "3 attempts over min-conn with the hold",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let lb = sim.min_conn(HOLD, &dynos);
                (sim.retry(3, lb), study_load(n))
            },
        },
        Scenario {
            name: "random-lbs-one-pool",
            about: "random over 10 faulty balancers (3 attempts, min-conn, hold) sharing 250 dynos",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let lbs = sim.pool(10, |sim| faulty_balancer(sim, &dynos));
                (sim.random(&lbs), study_load(n))
            },
        },
        Scenario {
            name: "retry-random-lbs-one-pool",
            about: "3 attempts over the above",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let lbs = sim.pool(10, |sim| faulty_balancer(sim, &dynos));
                let random = sim.random(&lbs);
                (sim.retry(3, random), study_load(n))
            },
        },
        Scenario {
            name: "retry-random-lbs-ten-pools",
            about: "3 attempts over random over 10 faulty balancers, each with its own 25 dynos",
            build: |sim, n| {
                let lbs = sim.pool(10, |sim| {
                    let dynos = sim.pool(DYNOS / 10, faulty_dyno);
                    faulty_balancer(sim, &dynos)
                });
                let random = sim.random(&lbs);
                (sim.retry(3, random), study_load(n))
            },
        },
        Scenario {
            name: "faulty-cascade",
            about: "status-traffic's node pool (success-weighted cascade, Gradient2 per dyno)",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                (sim.cascade(gradient2, &dynos), study_load(n))
            },
        },
        Scenario {
            name: "faulty-retry-cascade",
            about: "3 attempts over the node pool",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let pool = sim.cascade(gradient2, &dynos);
                (sim.retry(3, pool), study_load(n))
            },
        },
        Scenario {
            name: "faulty-retry-cascade-fixed-1",
            about: "3 attempts over the node pool, each dyno's limit fixed at its concurrency (1)",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                let pool = sim.cascade(|| Limiter::new(Fixed::new(1)), &dynos);
                (sim.retry(3, pool), study_load(n))
            },
        },
        Scenario {
            name: "faulty-p2c",
            about: "power of two choices by outstanding requests",
            build: |sim, n| {
                let dynos = sim.pool(DYNOS, faulty_dyno);
                (sim.balancer(crate::Balance::PowerOfTwo, &dynos), study_load(n))
            },
        },
        Scenario {
            name: "faulty-cull-min-conn",
            about: "min-conn over dynos that cull themselves (10 errors in 5 s; 25 culls per 10 s fleet-wide; back after 2 s)",
            build: |sim, n| {
                let budget = sim.budget(25, 10_000);
                let settings = CullSettings {
                    interval: 100,
                    ..CullSettings::default()
                };
                let dynos = sim.pool(DYNOS, |sim| {
                    let dyno = faulty_dyno(sim);
                    sim.cull(settings, budget, dyno)
                });
                (sim.min_conn(MinConn::default(), &dynos), study_load(n))
            },
        },
        Scenario {
            name: "faulty-cull-min-conn-ample",
            about: "the same with a budget of 250 culls per 10 s",
            build: |sim, n| {
                let budget = sim.budget(250, 10_000);
                let settings = CullSettings {
                    interval: 100,
                    ..CullSettings::default()
                };
                let dynos = sim.pool(DYNOS, |sim| {
                    let dyno = faulty_dyno(sim);
                    sim.cull(settings, budget, dyno)
                });
                (sim.min_conn(MinConn::default(), &dynos), study_load(n))
            },
        },
        Scenario {
            name: "burst-unprotected",
            about: "one server, 8 workers, 300 ms of work; 20 req/s, 5 s at 100 req/s, 20 req/s",
            build: |sim, _| (worker_server(sim), burst_load()),
        },
        Scenario {
            name: "burst-shed",
            about: "the same behind the shedding admission (Gradient2, queue 64, 1 s queue timeout, 2 s deadline)",
            build: |sim, _| {
                let server = worker_server(sim);
                (sim.shed(ShedSettings::default(), server), burst_load())
            },
        },
    ]
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

fn study_load(requests: u64) -> Load {
    Load::poisson(requests, MEAN_GAP)
}

fn gradient2() -> Limiter {
    Limiter::new(Gradient2::default())
}

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
