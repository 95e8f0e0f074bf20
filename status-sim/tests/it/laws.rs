//! Laws that hold for any seed, load and topology: every request is answered once and never
//! before it was issued, a seed gives one run, retries are bounded, quantiles are ordered.

use proptest::prelude::*;
use status_sim::{
    quantile, Balance, CullSettings, Load, MinConn, NodeId, Record, ShedSettings, Sim,
};
use status_traffic::limit::LimitChoice;

/// One of a few topologies over `width` backends, by `kind`; its root and the least time a
/// successful answer can take.
fn topology(sim: &mut Sim, kind: u8, width: usize, hold: u64) -> (NodeId, u64) {
    let backend = |sim: &mut Sim| {
        let server = sim.server();
        let work = sim.delay_exponential(10.0, server);
        let overhead = sim.delay_fixed(3, work);
        let queue = sim.queue_exclusive(overhead);
        let faulty = sim.faulty(300.0, 50.0, queue);
        sim.cable(1, faulty)
    };
    match kind % 5 {
        0 => {
            let nodes = sim.pool(width, backend);
            let lb = sim.min_conn(
                MinConn {
                    random_ties: hold % 2 == 1,
                    error_hold: hold,
                },
                &nodes,
            );
            (lb, 5)
        }
        1 => {
            let nodes = sim.pool(width, backend);
            let lb = sim.random(&nodes);
            (sim.retry(3, lb), 5)
        }
        2 => {
            let nodes = sim.pool(width, backend);
            let pool = sim.cascade(LimitChoice::Fixed(2), &nodes);
            (sim.retry(2, pool), 5)
        }
        3 => {
            let server = sim.server();
            let work = sim.delay_fixed(7, server);
            let queue = sim.queue_fixed_concurrency(width, work);
            let settings = ShedSettings {
                limit: LimitChoice::Fixed(3),
                queue: 4,
                queue_timeout: 20,
                deadline: 40,
                lifo_after: Some(10),
            };
            (sim.shed(settings, queue), 7)
        }
        _ => {
            let budget = sim.budget(2, 1_000);
            let settings = CullSettings {
                threshold: 3,
                window: 1_000,
                interval: 50,
                min_uptime: 0,
                restart: 200,
            };
            let nodes = sim.pool(width, |sim| {
                let node = backend(sim);
                sim.cull(settings, budget, node)
            });
            (sim.balancer(Balance::PowerOfTwo, &nodes), 5)
        }
    }
}

fn run(seed: u64, kind: u8, width: usize, hold: u64, n: u64, gap: f64) -> (Vec<Record>, u64) {
    let mut sim = Sim::new(seed);
    let (root, least) = topology(&mut sim, kind, width, hold);
    (sim.run(root, &Load::poisson(n, gap)), least)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_every_request_is_answered_once_after_it_was_issued(
        seed: u64,
        kind in 0u8..5,
        width in 1usize..6,
        hold in 0u64..40,
        n in 1u64..300,
        gap in 0.0f64..15.0,
    ) {
        let (records, least) = run(seed, kind, width, hold, n, gap);
        prop_assert_eq!(records.len() as u64, n);
        prop_assert!(records.windows(2).all(|w| w[0].issued <= w[1].issued));
        for r in &records {
            prop_assert!(r.answered >= r.issued);
            if r.ok {
                prop_assert!(r.latency() >= least, "{r:?} faster than the path allows");
            }
        }
    }

    #[test]
    fn prop_a_seed_gives_one_run(
        seed: u64,
        kind in 0u8..5,
        width in 1usize..6,
        n in 1u64..200,
    ) {
        prop_assert_eq!(run(seed, kind, width, 10, n, 4.0), run(seed, kind, width, 10, n, 4.0));
    }

    #[test]
    fn prop_retries_make_between_one_and_n_attempts(seed: u64, attempts in 1u32..5, n in 1u64..200) {
        let mut sim = Sim::new(seed);
        let server = sim.server();
        let faulty = sim.faulty(20.0, 20.0, server);
        let retry = sim.retry(attempts, faulty);
        let records = sim.run(retry, &Load::poisson(n, 3.0));
        let tries = sim.counts(faulty).arrived;
        prop_assert!(tries >= n && tries <= n * u64::from(attempts));
        // A request fails only after all its attempts failed.
        let failed = records.iter().filter(|r| !r.ok).count() as u64;
        prop_assert!(sim.counts(faulty).refused >= failed * u64::from(attempts));
    }

    #[test]
    fn prop_quantiles_are_ordered_and_bounded(
        mut values in proptest::collection::vec(0u64..10_000, 1..200),
        p in 0.0f64..=1.0,
        q in 0.0f64..=1.0,
    ) {
        values.sort_unstable();
        let (lo, hi) = if p <= q { (p, q) } else { (q, p) };
        let (a, b) = (quantile(&values, lo), quantile(&values, hi));
        prop_assert!(a <= b);
        prop_assert!(values[0] as f64 <= a && b <= *values.last().unwrap() as f64);
    }
}
