//! The routing study's findings, and ours, as the scenarios reproduce them (seed 1, the
//! study's 100,000 requests; every scenario runs once, on two threads, about ten seconds
//! unoptimized), and the README's table reporting these very runs.

use std::collections::HashMap;
use std::sync::OnceLock;

use status_sim::scenario::{self, Run, REQUESTS};

/// Every scenario's run with seed 1, shared by the tests.
fn runs() -> &'static HashMap<&'static str, Run> {
    static RUNS: OnceLock<HashMap<&'static str, Run>> = OnceLock::new();
    RUNS.get_or_init(|| {
        let all = scenario::all();
        let (odd, even): (Vec<_>, Vec<_>) = all.iter().enumerate().partition(|(i, _)| i % 2 == 1);
        std::thread::scope(|scope| {
            let halves = [odd, even].map(|half| {
                scope.spawn(move || {
                    half.into_iter()
                        .map(|(_, s)| (s.name, s.run(1, REQUESTS)))
                        .collect::<Vec<_>>()
                })
            });
            halves
                .into_iter()
                .flat_map(|h| h.join().expect("a scenario ran"))
                .collect()
        })
    })
}

fn run(name: &str) -> &'static Run {
    runs()
        .get(name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

#[test]
fn the_readme_reports_these_runs() {
    let readme = include_str!("../../README.md");
    let results = readme
        .split_once("### Results, seeds 1 to 5")
        .and_then(|(_, rest)| rest.split_once("### What it teaches"))
        .map(|(table, _)| table)
        .expect("the README's results section");
    let rows: Vec<(&str, &str)> = results
        .lines()
        .filter(|line| line.starts_with("| `") && line.contains(" · "))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`'), cells[2])
        })
        .collect();
    assert_eq!(rows.len(), scenario::all().len(), "a row per scenario");
    for (name, successes) in rows {
        let first = successes.split(" · ").next().unwrap();
        let now = format!("{:.2} %", run(name).summary.success * 100.0);
        assert_eq!(
            first, now,
            "{name}: the README says {first}, seed 1 gives {now}; rerun scripts/sim"
        );
    }
}

#[test]
fn least_connections_over_faulty_nodes_loses_over_a_third_and_holds_and_retries_win_it_back() {
    let ideal = run("ideal-min-conn");
    let faulty = run("faulty-min-conn");
    let hold = run("faulty-min-conn-hold");
    let retry = run("faulty-retry-min-conn-hold");
    assert_eq!(ideal.summary.success, 1.0);
    assert_eq!(ideal.summary.selected, 50_000);
    // Failed dynos answer fastest and attract the traffic.
    assert!(faulty.summary.success < 2.0 / 3.0, "{:?}", faulty.summary);
    assert!(faulty.summary.latency.p50 < ideal.summary.latency.p50);
    // Holding an erring dyno's connection for a second, then retrying.
    assert!(hold.summary.success > 0.98, "{:?}", hold.summary);
    assert!(retry.summary.success > 0.999, "{:?}", retry.summary);
    assert!(retry.summary.latency.p99 < ideal.summary.latency.p99 * 1.1);
}

#[test]
fn balancers_sharing_one_pool_queue_ten_times_longer_than_partitioned_ones() {
    let shared = run("retry-random-lbs-one-pool");
    let partitioned = run("retry-random-lbs-ten-pools");
    assert!(shared.summary.success > 0.99 && partitioned.summary.success > 0.99);
    // Each balancer sees only its own connections: the shared dynos queue.
    assert!(
        shared.summary.latency.p50 > 5.0 * partitioned.summary.latency.p50,
        "{:?} vs {:?}",
        shared.summary.latency,
        partitioned.summary.latency
    );
}

#[test]
fn our_mechanisms_over_the_same_fleet() {
    let ideal = run("ideal-min-conn");
    let min_conn = run("faulty-min-conn");
    let hold = run("faulty-min-conn-hold");
    let p2c = run("faulty-p2c");
    let cascade = run("faulty-cascade");
    let spread = run("faulty-cascade-spread");
    let retry_cascade = run("faulty-retry-cascade");
    let fixed = run("faulty-retry-cascade-fixed-1");
    let cull = run("faulty-cull-min-conn");
    let ample = run("faulty-cull-min-conn-ample");
    // Two random choices still favour the dyno that fails fast, less than min-conn does.
    assert!(p2c.summary.success > min_conn.summary.success);
    assert!(p2c.summary.success < 0.95, "{:?}", p2c.summary);
    // The pool with its defaults, no retries: better than the study's best balancer
    // (min-conn with a hold), at the ideal fleet's median.
    assert!(cascade.summary.success >= 0.99, "{:?}", cascade.summary);
    assert!(cascade.summary.success > hold.summary.success);
    assert!(
        cascade.summary.latency.p50 <= 1.05 * ideal.summary.latency.p50,
        "{:?} vs {:?}",
        cascade.summary.latency,
        ideal.summary.latency
    );
    // The weighted order alone, as the pool chose before: about the dynos' availability,
    // and calls queue behind busy dynos while others are idle.
    assert!(
        spread.summary.success > 0.95 && spread.summary.success < 0.97,
        "{:?}",
        spread.summary
    );
    assert!(spread.summary.latency.p50 > 1.2 * cascade.summary.latency.p50);
    // With retries nothing is lost, and a limit at a dyno's concurrency changes little now
    // that idle dynos are filled first.
    assert!(
        retry_cascade.summary.success > 0.999,
        "{:?}",
        retry_cascade.summary
    );
    assert!(fixed.summary.success > 0.999, "{:?}", fixed.summary);
    assert!(fixed.summary.latency.p99 < 1.1 * min_conn_hold_p99());
    assert!(retry_cascade.summary.latency.p99 < 1.1 * min_conn_hold_p99());
    // Culling helps as far as the budget lets it.
    assert!(cull.summary.success > min_conn.summary.success);
    assert!(ample.summary.success > cull.summary.success + 0.15);
}

#[test]
fn hedging_buys_the_tail_for_a_twentieth_of_the_load() {
    for (plain, hedged) in [
        ("ideal-min-conn", "hedge-ideal-min-conn"),
        ("faulty-min-conn-hold", "hedge-faulty-min-conn-hold"),
        ("faulty-cascade", "hedge-faulty-cascade"),
    ] {
        let (plain, hedged) = (run(plain), run(hedged));
        assert!(
            hedged.summary.latency.p99 < 0.9 * plain.summary.latency.p99,
            "{:?} vs {:?}",
            hedged.summary.latency,
            plain.summary.latency
        );
        // Past the 95th percentile: about one call in twenty, within the 10 % budget.
        assert!(
            hedged.extra_load > 0.03 && hedged.extra_load <= 0.1,
            "{}",
            hedged.extra_load
        );
        assert!(hedged.summary.success >= plain.summary.success - 0.002);
        assert_eq!(plain.extra_load, 0.0);
    }
}

fn min_conn_hold_p99() -> f64 {
    run("faulty-retry-min-conn-hold").summary.latency.p99
}

#[test]
fn the_shedding_admission_bounds_latency_through_a_burst() {
    let unprotected = run("burst-unprotected");
    let shed = run("burst-shed");
    // Without it every request is served, after up to 13 s in the queue.
    assert_eq!(unprotected.summary.success, 1.0);
    assert!(unprotected.summary.latency.p50 > 5_000.0);
    // With it no answer takes longer than the 2 s deadline, and the server is kept busy.
    assert!(shed.summary.latency.max <= 2_000.0, "{:?}", shed.summary);
    assert!(shed.summary.success > 0.4, "{:?}", shed.summary);
}
