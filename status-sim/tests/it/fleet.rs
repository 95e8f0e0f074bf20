//! The fleet scenario: status-fleet's real tracker in 300 instances, against the rules it
//! promises (stale after a TTL, failing open after three, settling for a TTL after the
//! store comes back empty, a failure published at once).

use status_sim::fleet::{figures, run, FleetScenario, Sample};

fn scenario() -> FleetScenario {
    FleetScenario {
        instances: 300,
        ..FleetScenario::default()
    }
}

#[test]
fn views_go_stale_after_a_ttl_fail_open_after_three_and_settle_for_a_ttl() {
    let s = scenario();
    let samples = run(&s);
    let f = figures(&s, &samples);
    let (beat, step) = (s.ttl / 3, s.sample_every);
    // The last read before the loss is at most a beat old: stale between TTL - beat and TTL.
    let (first, all) = f.stale.expect("views went stale");
    assert!(
        first + beat >= s.ttl && all <= s.ttl + s.latency + step,
        "{f:?}"
    );
    let (first, all) = f.fail_open.expect("views failed open");
    assert!(
        first + beat >= 3 * s.ttl && all <= 3 * s.ttl + s.latency + step,
        "{f:?}"
    );
    // Back empty: settling for a TTL, then the next beat reads.
    let fresh = f.fresh_again.expect("fresh again");
    assert!(fresh >= s.ttl && fresh <= s.ttl + beat + step, "{f:?}");
}

#[test]
fn a_datacenter_failure_reaches_every_instance_within_a_beat() {
    let s = scenario();
    let f = figures(&s, &run(&s));
    let bound = s.ttl / 3 + s.ttl / 30 + s.sample_every + s.latency;
    let (first, all) = f.dc1_out.expect("dc-1 taken out");
    assert!(first <= s.sample_every + s.latency && all <= bound, "{f:?}");
    assert!(f.dc1_back.expect("dc-1 back") <= bound, "{f:?}");
}

#[test]
fn without_trouble_no_view_is_stale_once_everyone_beat() {
    let s = FleetScenario {
        store_lost: None,
        datacenter_fails: None,
        duration: 20_000,
        ..scenario()
    };
    let samples = run(&s);
    let settled: Vec<&Sample> = samples.iter().filter(|x| x.at > s.ttl / 3 + 10).collect();
    assert!(!settled.is_empty());
    for sample in settled {
        assert_eq!(sample.fresh, s.instances, "{sample:?}");
        assert_eq!(sample.dc1_out, 0, "{sample:?}");
    }
}

#[test]
fn a_seed_gives_one_run() {
    let s = scenario();
    assert_eq!(run(&s), run(&s));
}
