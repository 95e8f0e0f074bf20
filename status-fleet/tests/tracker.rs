//! The fleet tracker's rules, told the time and the store's answers: no store, no runtime.

use std::time::{Duration, Instant};

use status_core::CheckStatus;
use status_fleet::{
    Answer, Beat, BeatError, Conditions, DatacenterCounts, FleetTracker, HealthRule, Member, Note,
    Published, REJECTIONS,
};

const TTL: Duration = Duration::from_secs(3);

fn member() -> Member {
    Member {
        instance_id: "a".into(),
        datacenter: "east".into(),
        version: "1".into(),
        url: String::new(),
    }
}

fn ok() -> Published {
    Published::new(CheckStatus::Ok, Vec::new())
}

/// Counts of `east` with `ok` instances OK and `out` in OUTAGE, and of `west` all OK.
fn counts(ok: usize, out: usize) -> Vec<DatacenterCounts> {
    let east = Conditions {
        ok,
        outage: out,
        ..Conditions::default()
    };
    let west = Conditions {
        ok: 4,
        ..Conditions::default()
    };
    vec![
        DatacenterCounts::new("east", east, ok),
        DatacenterCounts::new("west", west, 4),
    ]
}

fn answered(datacenters: Vec<DatacenterCounts>) -> Answer {
    Answer::Answered(Ok(Beat::kept(0, datacenters, [0; REJECTIONS.len()])))
}

/// One beat of `ok()` at `at`, answered `answer` 5 ms later.
fn beat(tracker: &mut FleetTracker, at: Instant, answer: Answer) -> Vec<Note> {
    tracker.beating(at, ok());
    tracker
        .answered(at + Duration::from_millis(5), answer)
        .notes
}

#[test]
fn until_the_first_read_the_view_is_this_instance_alone_and_stale() {
    let t0 = Instant::now();
    let tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    let view = tracker.view(t0);
    assert!(view.stale && !view.fail_open);
    assert_eq!(view.datacenters.len(), 1);
    assert!(view.datacenter("east").unwrap().healthy);
    // Never read for three TTLs: failing open like any view that old.
    assert!(
        tracker
            .view(t0 + 3 * TTL + Duration::from_millis(1))
            .fail_open
    );
}

#[test]
fn a_read_view_is_fresh_for_a_ttl_stale_after_and_fails_open_after_three() {
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    beat(&mut tracker, t0, answered(counts(1, 3)));
    let read = t0 + Duration::from_millis(5);
    let fresh = tracker.view(read + TTL);
    assert!(!fresh.stale);
    assert!(!fresh.datacenter("east").unwrap().healthy);
    assert!(
        std::sync::Arc::ptr_eq(&fresh, &tracker.view(read)),
        "the same Arc while fresh"
    );

    let stale = tracker.view(read + TTL + Duration::from_millis(1));
    assert!(stale.stale && !stale.fail_open);
    assert!(!stale.datacenter("east").unwrap().answers_healthy());

    let open = tracker.view(read + 3 * TTL + Duration::from_millis(1));
    assert!(open.stale && open.fail_open);
    assert!(open
        .datacenters
        .iter()
        .all(status_fleet::DatacenterView::answers_healthy));
}

#[test]
fn a_settling_store_is_not_the_fleet_the_last_view_ages() {
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    beat(&mut tracker, t0, answered(counts(4, 0)));
    let mut settling = Beat::kept(0, counts(0, 1), [0; REJECTIONS.len()]);
    settling.settling = true;
    let later = t0 + TTL / 3;
    let notes = beat(&mut tracker, later, Answer::Answered(Ok(settling)));
    assert_eq!(notes, vec![Note::Settling]);
    let view = tracker.view(t0 + TTL + Duration::from_millis(10));
    assert!(view.stale, "not refreshed by a settling store");
    assert!(
        view.datacenter("east").unwrap().healthy,
        "the last real view"
    );
}

#[test]
fn trouble_is_said_once_per_run_and_its_end_once() {
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    let failed = |e: &str| Answer::Answered(Err(BeatError::Store(e.into())));
    let first = beat(&mut tracker, t0, failed("refused"));
    assert!(matches!(
        &first[..],
        [Note::StoreFailed {
            first: true,
            cause: Some(_),
        }]
    ));
    let second = beat(&mut tracker, t0 + TTL / 3, Answer::Late);
    assert!(matches!(
        &second[..],
        [Note::StoreFailed {
            first: false,
            cause: None,
        }]
    ));
    let back = beat(&mut tracker, t0 + 2 * TTL / 3, answered(counts(4, 0)));
    assert_eq!(back, vec![Note::StoreBack]);

    let taken = || {
        Answer::Answered(Err(BeatError::IdTaken {
            datacenter: "east".into(),
        }))
    };
    let t1 = t0 + TTL;
    assert!(matches!(
        &beat(&mut tracker, t1, taken())[..],
        [Note::IdTaken { first: true, .. }]
    ));
    assert!(matches!(
        &beat(&mut tracker, t1 + TTL / 3, taken())[..],
        [Note::IdTaken { first: false, .. }]
    ));
    assert_eq!(
        beat(&mut tracker, t1 + TTL, answered(counts(4, 0))),
        vec![Note::IdBack]
    );
}

#[test]
fn the_outcome_of_the_fleet_dependency_follows_the_answer() {
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    tracker.beating(t0, ok());
    let told = tracker.answered(t0 + Duration::from_millis(5), answered(counts(4, 0)));
    assert_eq!(told.outcome.status(), CheckStatus::Ok);
    tracker.beating(t0 + TTL / 3, ok());
    let told = tracker.answered(
        t0 + TTL / 3,
        Answer::Answered(Err(BeatError::Rejected(status_fleet::Rejection::TooLarge))),
    );
    assert_eq!(told.outcome.status(), CheckStatus::Major);
    assert_eq!(
        told.notes,
        vec![Note::Rejected(status_fleet::Rejection::TooLarge)]
    );
    tracker.beating(t0 + TTL, ok());
    let told = tracker.answered(t0 + TTL + TTL / 3, Answer::Late);
    assert_eq!(told.outcome.status(), CheckStatus::Outage);
}

#[test]
fn a_change_is_published_at_once_but_never_within_a_thirtieth_of_the_ttl_of_the_last() {
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    assert_eq!(
        tracker.publish_at(t0, &ok()),
        Some(t0),
        "nothing published yet"
    );
    tracker.beating(t0, ok());
    assert_eq!(tracker.publish_at(t0, &ok()), None, "unchanged");
    let down = Published::new(CheckStatus::Outage, Vec::new());
    let soon = t0 + Duration::from_millis(10);
    assert_eq!(tracker.publish_at(soon, &down), Some(t0 + TTL / 30));
    let later = t0 + TTL;
    assert_eq!(tracker.publish_at(later, &down), Some(later));
}

#[test]
fn counts_the_store_pushes_are_the_view_without_a_beat() {
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    beat(&mut tracker, t0, answered(counts(4, 0)));
    let at = t0 + 2 * TTL;
    assert!(tracker.view(at).stale);
    tracker.counts_moved(at, counts(0, 4));
    let view = tracker.view(at);
    assert!(!view.stale);
    assert!(!view.datacenter("east").unwrap().healthy);
    assert_eq!(tracker.read_at(), Some(at));
}

#[test]
fn a_failing_row_keeps_the_time_it_was_first_read_while_it_lasts() {
    let failing = |on: bool| {
        let mut counts = counts(1, 3);
        if on {
            counts[0].failing = vec![status_fleet::DependencyCount {
                dependency: "db".into(),
                level: CheckStatus::Outage,
                instances: 3,
            }];
        }
        answered(counts)
    };
    let since = |tracker: &FleetTracker, at: Instant| {
        tracker
            .view(at)
            .datacenter("east")
            .and_then(|d| d.failing.first().and_then(|f| f.since))
    };
    let t0 = Instant::now();
    let mut tracker = FleetTracker::new(member(), HealthRule::default(), TTL, t0, CheckStatus::Ok);
    beat(&mut tracker, t0, failing(true));
    let first = t0 + Duration::from_millis(5);
    assert_eq!(since(&tracker, first), Some(first));
    // Read again a beat later: the same first sight.
    let t1 = t0 + TTL / 3;
    beat(&mut tracker, t1, failing(true));
    assert_eq!(since(&tracker, t1), Some(first));
    // Gone, then back: a new first sight.
    let t2 = t1 + TTL / 3;
    beat(&mut tracker, t2, failing(false));
    assert_eq!(since(&tracker, t2), None);
    let t3 = t2 + TTL / 3;
    beat(&mut tracker, t3, failing(true));
    assert_eq!(since(&tracker, t3), Some(t3 + Duration::from_millis(5)));
}
