//! Each primitive's semantics on small cases checked by hand.

use status_sim::{Balance, CullSettings, Gap, Load, MinConn, NodeId, Record, ShedSettings, Sim};
use status_traffic::limit::LimitChoice;

/// A node that is down from the first request on and stays down (a faulty node whose first
/// flip is at 0 and whose repair takes forever).
fn dead(sim: &mut Sim) -> NodeId {
    let server = sim.server();
    sim.faulty(0.0, 1e15, server)
}

/// `delay-fixed dt → server`.
fn worker(sim: &mut Sim, dt: u64) -> NodeId {
    let server = sim.server();
    sim.delay_fixed(dt, server)
}

/// Shedding with a fixed limit of `limit`, room for one waiter, 50 ms of queue and 100 ms in
/// all, first come first served.
fn tight(limit: usize) -> ShedSettings {
    ShedSettings {
        limit: LimitChoice::Fixed(limit),
        queue: 1,
        queue_timeout: 50,
        deadline: 100,
        lifo_after: None,
    }
}

fn latencies(records: &[Record]) -> Vec<u64> {
    records.iter().map(Record::latency).collect()
}

#[test]
fn a_server_answers_at_once_and_delays_add_up() {
    let mut sim = Sim::new(1);
    let server = sim.server();
    let records = sim.run(server, &Load::every(3, 5));
    assert_eq!(latencies(&records), [0, 0, 0]);
    assert_eq!(
        records.iter().map(|r| r.issued).collect::<Vec<_>>(),
        [0, 5, 10]
    );
    assert!(records.iter().all(|r| r.ok));

    // delay-fixed is one way; a cable waits on the way back too.
    let mut sim = Sim::new(1);
    let server = sim.server();
    let delay = sim.delay_fixed(7, server);
    let cable = sim.cable(3, delay);
    let records = sim.run(cable, &Load::every(2, 1));
    assert_eq!(latencies(&records), [3 + 7 + 3, 13]);
}

#[test]
fn exponential_delays_are_whole_milliseconds_of_their_mean() {
    let mut sim = Sim::new(5);
    let server = sim.server();
    let delay = sim.delay_exponential(20.0, server);
    let records = sim.run(delay, &Load::every(50_000, 1));
    let l = latencies(&records);
    let mean = l.iter().sum::<u64>() as f64 / l.len() as f64;
    assert!((mean - 20.0).abs() < 0.4, "{mean}");
    assert!(l.contains(&0), "rounding to whole ms gives 0 sometimes");
    // Exponential: about 1/e of the draws exceed the mean.
    let above = l.iter().filter(|&&ms| ms as f64 > 20.5).count() as f64 / l.len() as f64;
    assert!((above - (-1f64).exp()).abs() < 0.02, "{above}");
}

#[test]
fn queues_serve_first_come_first_served_within_their_concurrency() {
    // Four requests at 0 ms into one at a time, 10 ms each.
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 10);
    let queue = sim.queue_exclusive(work);
    let records = sim.run(queue, &Load::every(4, 0));
    assert_eq!(latencies(&records), [10, 20, 30, 40]);

    // Two at a time.
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 10);
    let queue = sim.queue_fixed_concurrency(2, work);
    let records = sim.run(queue, &Load::every(5, 0));
    assert_eq!(latencies(&records), [10, 10, 20, 20, 30]);

    // A request arriving while one is served waits only for the rest of it.
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 10);
    let queue = sim.queue_exclusive(work);
    let records = sim.run(queue, &Load::every(3, 4));
    assert_eq!(latencies(&records), [10, 16, 22]);
}

#[test]
fn a_faulty_node_is_up_mtbf_over_mtbf_plus_mttr_of_the_time() {
    let mut sim = Sim::new(11);
    let server = sim.server();
    let faulty = sim.faulty(2_000.0, 500.0, server);
    let records = sim.run(faulty, &Load::every(400_000, 1));
    let up = records.iter().filter(|r| r.ok).count() as f64 / records.len() as f64;
    assert!((up - 0.8).abs() < 0.02, "availability {up}, expected 0.8");
    // While down it answers at once and passes nothing on.
    assert!(records.iter().all(|r| r.latency() == 0));
    assert_eq!(
        sim.counts(server).arrived,
        records.iter().filter(|r| r.ok).count() as u64
    );
    assert_eq!(
        sim.counts(faulty).refused,
        records.iter().filter(|r| !r.ok).count() as u64
    );
}

#[test]
fn a_faulty_node_flips_once_per_arrival_however_late() {
    // Requests 100 s apart against mtbf 1 ms, mttr 1 ms: each arrival after the first finds
    // its flip time long passed and flips exactly once, so the answers alternate.
    for seed in 0..20 {
        let mut sim = Sim::new(seed);
        let server = sim.server();
        let faulty = sim.faulty(1.0, 1.0, server);
        let records = sim.run(faulty, &Load::every(9, 100_000));
        let oks: Vec<bool> = records.iter().map(|r| r.ok).collect();
        assert!(oks.windows(2).all(|w| w[0] != w[1]), "seed {seed}: {oks:?}");
    }
}

#[test]
fn retries_stop_at_the_first_success_or_after_n_attempts() {
    // Round-robin over [dead, dead, up]: three attempts reach the live one.
    for (attempts, ok) in [(3, true), (2, false)] {
        let mut sim = Sim::new(1);
        let a = dead(&mut sim);
        let b = dead(&mut sim);
        let c = sim.server();
        let lb = sim.round_robin(&[a, b, c]);
        let retry = sim.retry(attempts, lb);
        let records = sim.run(retry, &Load::every(1, 0));
        assert_eq!(records[0].ok, ok, "{attempts} attempts");
        assert_eq!(sim.counts(lb).arrived, u64::from(attempts));
        assert_eq!(sim.counts(c).arrived, u64::from(ok));
    }
}

#[test]
fn min_conn_picks_the_fewest_outstanding_ties_to_the_lowest_index() {
    let mut sim = Sim::new(1);
    let backends = sim.pool(3, |sim| worker(sim, 100));
    let lb = sim.min_conn(MinConn::default(), &backends);
    // Four at once: 0, 1, 2, then 0 again; later ones after all answered go to 0.
    let _ = sim.run(lb, &Load::every(4, 0));
    let arrived: Vec<u64> = backends.iter().map(|&b| sim.counts(b).arrived).collect();
    assert_eq!(arrived, [2, 1, 1]);

    // With random ties, a lone request lands on each backend about a third of the time.
    let mut sim = Sim::new(1);
    let backends = sim.pool(3, |sim| worker(sim, 1));
    let random_ties = MinConn {
        random_ties: true,
        error_hold: 0,
    };
    let lb = sim.min_conn(random_ties, &backends);
    let _ = sim.run(lb, &Load::every(30_000, 10));
    for &b in &backends {
        let share = sim.counts(b).arrived as f64 / 30_000.0;
        assert!((share - 1.0 / 3.0).abs() < 0.015, "{share}");
    }
}

#[test]
fn an_error_hold_keeps_a_fast_failing_backend_from_taking_everything() {
    // [dead, slow]: requests 1 ms apart. Without a hold the dead one answers at once and,
    // back at 0 outstanding, wins every tie: it takes all ten.
    let run = |hold| {
        let mut sim = Sim::new(1);
        let dead = dead(&mut sim);
        let slow = worker(&mut sim, 100);
        let lb = sim.min_conn(
            MinConn {
                random_ties: false,
                error_hold: hold,
            },
            &[dead, slow],
        );
        let records = sim.run(lb, &Load::every(10, 1));
        let oks = records.iter().filter(|r| r.ok).count();
        (sim.counts(dead).arrived, sim.counts(slow).arrived, oks)
    };
    assert_eq!(run(0), (10, 0, 0));
    // With a hold its connection stays counted: 0 ms dead (1 held), 1 ms slow (1), 2 ms tie
    // → dead (2 held), 3 ms slow (2), …: they alternate.
    assert_eq!(run(1000), (5, 5, 5));
}

#[test]
fn balancers_sharing_a_pool_keep_their_own_counts() {
    // Two min-conn balancers over the same two backends, each sent one request at 0 ms:
    // each sees both backends idle and picks the first.
    let mut sim = Sim::new(1);
    let backends = sim.pool(2, |sim| worker(sim, 50));
    let lb1 = sim.min_conn(MinConn::default(), &backends);
    let lb2 = sim.min_conn(MinConn::default(), &backends);
    let front = sim.round_robin(&[lb1, lb2]);
    let _ = sim.run(front, &Load::every(2, 0));
    assert_eq!(sim.counts(backends[0]).arrived, 2);
    assert_eq!(sim.counts(backends[1]).arrived, 0);
}

#[test]
fn pool_copies_are_independent() {
    // Two faulty copies fail at different times: their error counts differ.
    let mut sim = Sim::new(4);
    let copies = sim.pool(2, |sim| {
        let server = sim.server();
        sim.faulty(200.0, 100.0, server)
    });
    let lb = sim.round_robin(&copies);
    let records = sim.run(lb, &Load::every(20_000, 1));
    let failed_on = |i: usize| {
        records
            .iter()
            .enumerate()
            .filter(|(k, r)| k % 2 == i && !r.ok)
            .map(|(k, _)| k / 2)
            .collect::<Vec<_>>()
    };
    assert_ne!(failed_on(0), failed_on(1));
    assert!(!failed_on(0).is_empty() && !failed_on(1).is_empty());
}

#[test]
fn p2c_prefers_the_less_loaded_of_two() {
    // Two backends: one slow (1000 ms), one fast (1 ms), a request every 5 ms. With two
    // choices among two, every request sees both: the slow one gets a request only when
    // its previous one is done (a tie, won by the first drawn), so at most one a second.
    let mut sim = Sim::new(3);
    let slow = worker(&mut sim, 1000);
    let fast = worker(&mut sim, 1);
    let lb = sim.balancer(Balance::PowerOfTwo, &[slow, fast]);
    let _ = sim.run(lb, &Load::every(1000, 5));
    let to_slow = sim.counts(slow).arrived;
    assert!((1..=5).contains(&to_slow), "{to_slow}");
    assert_eq!(sim.counts(fast).arrived, 1000 - to_slow);
}

#[test]
fn loads_issue_in_phases_with_their_gaps() {
    let mut sim = Sim::new(9);
    let server = sim.server();
    let load = Load::phases([
        (3, Gap::Fixed(10)),
        (2, Gap::Fixed(0)),
        (20_000, Gap::Exponential(4.0)),
    ]);
    let records = sim.run(server, &load);
    let issued: Vec<u64> = records.iter().take(6).map(|r| r.issued).collect();
    // 0, 10, 20; the next phase's gap (0) before each of its two; then exponential.
    assert_eq!(issued[..5], [0, 10, 20, 20, 20]);
    let span = records.last().unwrap().issued - records[5].issued;
    let mean = span as f64 / 19_999.0;
    assert!((mean - 4.0).abs() < 0.1, "{mean}");
}

#[test]
fn a_seed_gives_one_run() {
    let run = |seed| {
        let mut sim = Sim::new(seed);
        let nodes = sim.pool(20, |sim| {
            let server = sim.server();
            let work = sim.delay_exponential(30.0, server);
            let queue = sim.queue_exclusive(work);
            sim.faulty(2_000.0, 200.0, queue)
        });
        let lb = sim.min_conn(MinConn::default(), &nodes);
        let retry = sim.retry(2, lb);
        sim.run(retry, &Load::poisson(5_000, 3.0))
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn shedding_admits_queues_and_refuses_as_the_layer_does() {
    // Limit 1, room for 1, 50 ms of queue, 100 ms in all, in front of 30 ms of work.
    let settings = tight(1);
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 30);
    let shed = sim.shed(settings.clone(), work);
    let records = sim.run(shed, &Load::every(3, 0));
    // First runs (30 ms), second waits for it (60 ms), third finds the room full at once.
    assert_eq!(latencies(&records), [30, 60, 0]);
    assert_eq!(
        records.iter().map(|r| r.ok).collect::<Vec<_>>(),
        [true, true, false]
    );
    assert_eq!(sim.counts(shed).queue_full, 1);

    // 60 ms of work: the waiter's 50 ms run out before the first is done, and it is never
    // processed.
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 60);
    let shed = sim.shed(settings.clone(), work);
    let records = sim.run(shed, &Load::every(2, 0));
    assert_eq!(latencies(&records), [60, 50]);
    assert!(records[0].ok && !records[1].ok);
    assert_eq!(sim.counts(shed).queue_timeout, 1);
    assert_eq!(
        sim.counts(work).arrived,
        1,
        "the timed-out request never ran"
    );

    // 150 ms of work: cut off by the 100 ms deadline; the next request gets the capacity at
    // once.
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 150);
    let shed = sim.shed(settings.clone(), work);
    let records = sim.run(shed, &Load::every(2, 120));
    assert_eq!(latencies(&records), [100, 100]);
    assert!(records.iter().all(|r| !r.ok));
    assert_eq!(sim.counts(shed).deadline, 2);
    assert_eq!(sim.counts(work).arrived, 2);
}

#[test]
fn a_deadline_drops_the_work_below_and_frees_its_queue_slot() {
    // Limit 2 in front of one worker (a queue of one at a time) and 150 ms of work, 100 ms
    // deadline, requests at 0 and 10 ms. The first is cut off at 100 ms and the worker is
    // freed for the second at once (not at 150 ms): it starts at 100 ms and is cut off in
    // turn at 110 ms. Neither piece of work ever completes.
    let settings = tight(2);
    let mut sim = Sim::new(1);
    let server = sim.server();
    let work = sim.delay_fixed(150, server);
    let queue = sim.queue_exclusive(work);
    let shed = sim.shed(settings, queue);
    // A third request at 120 ms finds the worker free and its work (cut at 220 ms) started at
    // 120 ms, not behind the second's.
    let load = Load::phases([(2, Gap::Fixed(10)), (1, Gap::Fixed(110))]);
    let records = sim.run(shed, &load);
    assert_eq!(
        records.iter().map(|r| r.issued).collect::<Vec<_>>(),
        [0, 10, 120]
    );
    assert_eq!(latencies(&records), [100, 100, 100]);
    assert_eq!(sim.counts(work).arrived, 3, "each started on the worker");
    assert_eq!(sim.counts(server).arrived, 0, "and none finished: dropped");
    assert_eq!(sim.counts(shed).deadline, 3);
}

#[test]
fn a_second_run_goes_on_from_the_first() {
    // Work cut off by the deadline in the first run still has events pending when it ends;
    // they must not reach the second run's requests.
    let settings = tight(2);
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 150);
    let shed = sim.shed(settings, work);
    let first = sim.run(shed, &Load::every(2, 120));
    assert_eq!(sim.now(), 220);
    assert_eq!(latencies(&first), [100, 100]);
    // The second request's work would have finished at 270 ms.
    let second = sim.run(shed, &Load::every(2, 20));
    assert_eq!(
        second.iter().map(|r| r.issued).collect::<Vec<_>>(),
        [220, 240]
    );
    assert_eq!(latencies(&second), [100, 100]);
    assert!(second.iter().all(|r| !r.ok));
    assert_eq!(sim.counts(shed).deadline, 4);
}

#[test]
fn shedding_under_a_burst_serves_the_newest_first() {
    // Limit 1, 10 ms of work, ten at once, LIFO after 15 ms of waiting: the first runs,
    // the second is served first-come (the oldest has waited 10 ms), then the queue is
    // congested and the newest go first.
    let settings = ShedSettings {
        limit: LimitChoice::Fixed(1),
        queue: 16,
        queue_timeout: 1000,
        deadline: 2000,
        lifo_after: Some(15),
    };
    let mut sim = Sim::new(1);
    let work = worker(&mut sim, 10);
    let shed = sim.shed(settings, work);
    let records = sim.run(shed, &Load::every(10, 0));
    assert_eq!(
        latencies(&records),
        [10, 20, 100, 90, 80, 70, 60, 50, 40, 30]
    );
}

#[test]
fn a_culled_node_leaves_rotation_and_a_fresh_one_returns_after_the_restart() {
    // Random over [a node that dies for good, a server]. Culling: 10 failures in 5 s, a look
    // every 100 ms, back after 2 s; a budget of one cull per minute.
    let settings = CullSettings {
        threshold: 10,
        window: 5_000,
        interval: 100,
        min_uptime: 0,
        restart: 2_000,
    };
    let mut sim = Sim::new(8);
    let budget = sim.budget(1, 60_000);
    let server = sim.server();
    let doomed = sim.faulty(0.0, 1e15, server);
    let cull = sim.cull(settings, budget, doomed);
    let healthy = sim.server();
    let lb = sim.random(&[cull, healthy]);
    let records = sim.run(lb, &Load::every(10_000, 1));
    let counts = sim.counts(cull);
    assert_eq!(counts.culled, 1, "{counts:?}");
    assert!(counts.denied > 0, "the second cull was refused: {counts:?}");
    // Out of rotation from its cull (within ~130 ms) for 2 s: then the fresh node, up until
    // its first request (mtbf 0), is dead again and stays in rotation (no token).
    let failed_between = |from: u64, to: u64| {
        records
            .iter()
            .filter(|r| (from..to).contains(&r.issued) && !r.ok)
            .count()
    };
    assert!(failed_between(0, 130) >= 10);
    assert_eq!(
        failed_between(200, 2_000),
        0,
        "out of rotation, nothing fails"
    );
    assert!(
        failed_between(2_300, 10_000) > 3_000,
        "back, dead, and no token left"
    );
    assert!(sim.in_rotation(cull));
}

#[test]
fn the_cascade_holds_a_failing_node_back_one_call_per_hold() {
    let mut sim = Sim::new(6);
    let a = dead(&mut sim);
    let b = worker(&mut sim, 5);
    let pool = sim.cascade(LimitChoice::Fixed(100), &[a, b]);
    let records = sim.run(pool, &Load::every(20_000, 1));
    // Each failure holds the dead node back for 5 s; once the hold ends it is offered again
    // only with its weight's chance (the floor, 0.01) while the live one is idle: one failed
    // call per hold and a little, four in 20 s.
    let failures = records.iter().filter(|r| !r.ok).count();
    assert_eq!(failures, 4, "one per hold");
    assert_eq!(sim.counts(a).arrived as usize, failures);
    assert_eq!(sim.counts(b).arrived as usize, 20_000 - failures);
}

#[test]
fn the_spread_cascade_moves_traffic_off_a_failing_node() {
    let mut sim = Sim::new(6);
    let a = dead(&mut sim);
    let b = worker(&mut sim, 5);
    let spread = status_sim::CascadeSettings {
        spread: true,
        hold: 0,
        ..status_sim::CascadeSettings::default()
    };
    let pool = sim.cascade_with(LimitChoice::Fixed(100), spread, &[a, b]);
    let records = sim.run(pool, &Load::every(20_000, 1));
    // Both start without history (weight 1). The dead node's first failure makes its rate 0
    // and its weight the floor, 0.01: from then on it is tried first about once in 101
    // calls (to see whether it recovered), the live one, which always has capacity, the rest.
    let failures = records.iter().filter(|r| !r.ok).count();
    let floor =
        20_000.0 * status_traffic::pool::WEIGHT_FLOOR / (1.0 + status_traffic::pool::WEIGHT_FLOOR);
    assert!(
        (failures as f64 - floor).abs() < 4.0 * floor.sqrt(),
        "{failures} failed, about {floor:.0} expected"
    );
    assert_eq!(sim.counts(a).arrived as usize, failures);
    assert_eq!(sim.counts(b).arrived as usize, 20_000 - failures);
}

/// A hedge (fixed at 10 ms, of `budget` with a burst of one) over round-robin between a slow
/// node (100 ms) and a fast one (5 ms): the simulation, the hedge, the slow and the fast node.
fn hedged_pair(budget: f64) -> (Sim, NodeId, NodeId, NodeId) {
    use status_traffic::hedge::{HedgeDelay, HedgeSettings};
    let mut sim = Sim::new(3);
    let slow = worker(&mut sim, 100);
    let fast = worker(&mut sim, 5);
    let lb = sim.round_robin(&[slow, fast]);
    let settings = HedgeSettings {
        delay: HedgeDelay::Fixed(std::time::Duration::from_millis(10)),
        budget,
        burst: 1.0,
        ..HedgeSettings::default()
    };
    let hedge = sim.hedge(settings, lb);
    (sim, hedge, slow, fast)
}

#[test]
fn a_hedge_sends_a_second_copy_after_its_delay_and_the_first_answer_wins() {
    // One request a second: each goes to the slow node (the turn comes back to it), is
    // hedged at 10 ms, and the copy goes to the fast one, which answers at 15 ms. The slow
    // copy is cancelled.
    let (mut sim, hedge, slow, fast) = hedged_pair(1.0);
    let records = sim.run(hedge, &Load::every(20, 1000));
    assert!(
        records.iter().all(|r| r.ok && r.latency() == 15),
        "{records:?}"
    );
    assert_eq!(sim.counts(hedge).hedged, 20);
    assert_eq!(sim.hedged(), 20);
    assert_eq!(sim.counts(slow).arrived, 20);
    assert_eq!(sim.counts(fast).arrived, 20);

    // With a budget of one hedge in ten and no burst to spend, most requests wait for the
    // slow node: the copies sent are what the budget earned.
    let (mut sim, hedge, _, _) = hedged_pair(0.1);
    let records = sim.run(hedge, &Load::every(100, 1000));
    let hedged = sim.hedged();
    assert!((9..=11).contains(&hedged), "{hedged}");
    let quick = records.iter().filter(|r| r.latency() == 15).count() as u64;
    assert_eq!(quick, hedged, "each hedged request answered by its copy");
}
