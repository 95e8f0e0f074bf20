//! "Mine or shared", the rule alone: per-dependency sharing, readiness excusing exactly what
//! is shared, the two data-center thresholds, and counts no store could have made.

use status_core::{CheckStatus, Readiness};
use status_fleet::{
    Conditions, DatacenterCounts, DependencyCount, FailingDependency, FleetView, HealthRule, Own,
    OwnFailure,
};
/// East: ten fresh instances, this one among them; `db` OUTAGE on `db` of them (this one
/// included), `cache` MINOR on this one alone.
fn east(db: usize) -> FleetView {
    let mut counts = DatacenterCounts::new(
        "east",
        Conditions {
            ok: 10 - db,
            outage: db,
            ..Conditions::default()
        },
        10 - db,
    );
    counts.failing = vec![
        DependencyCount {
            dependency: "cache".into(),
            level: CheckStatus::Minor,
            instances: 1,
        },
        DependencyCount {
            dependency: "db".into(),
            level: CheckStatus::Outage,
            instances: db,
        },
    ];
    let mut view = FleetView::from_counts(vec![counts], HealthRule::default());
    let failure = |id: &str, level, impact| OwnFailure {
        dependency: FailingDependency::new(id, level),
        impact,
    };
    view.own = Some(Own {
        datacenter: "east".into(),
        condition: CheckStatus::Outage,
        failing: vec![
            failure("db", CheckStatus::Outage, CheckStatus::Outage),
            failure("cache", CheckStatus::Minor, CheckStatus::Minor),
        ],
    });
    view
}

fn failing(strict: bool) -> Readiness {
    Readiness::judge(CheckStatus::Outage, strict, true, None, || {
        vec!["db is OUTAGE".into()]
    })
}

#[test]
fn a_shared_failure_is_excused_unless_a_failure_of_its_own_fails_readiness() {
    // db on 6 of 10: 5 of the 9 others, more than half. cache MINOR alone does not fail
    // readiness by itself: excused, and the reason says the count.
    let ready = east(6).readiness("east", "me", failing(false));
    assert!(ready.ready());
    let why = ready.rule().unwrap().to_string();
    assert_eq!(why, "fleet");
    let Some(status_core::ReadinessRule::Fleet(why)) = ready.rule() else {
        panic!()
    };
    assert_eq!(
        why,
        "db OUTAGE is shared: 5 of the 9 other instances of east fail it too; \
         left to the data-center endpoint"
    );
    // Strict readiness fails on MINOR: the cache, this instance's own, is not excused.
    assert!(!east(6).readiness("east", "me", failing(true)).ready());
    // db on 5 of 10: 4 of the 9 others, not more than half: its own.
    assert!(!east(5).readiness("east", "me", failing(false)).ready());
    // Stale: no information.
    let stale = east(10).into_stale();
    assert!(!stale.readiness("east", "me", failing(false)).ready());
    // Another data center's counts never excuse.
    assert!(!east(10).readiness("west", "me", failing(false)).ready());
}

#[test]
fn two_thresholds_remove_from_gslb_first_then_fail_readiness_open() {
    let rule = HealthRule {
        healthy_share: 0.5,
        min_serving: 3,
        ready_fail_open_share: 0.3,
        ..HealthRule::default()
    };
    rule.check().unwrap();
    // Ten instances: 5 serving is healthy; 4 is removed; 2 fails readiness open too.
    assert!(rule.healthy(5, 10) && !rule.ready_fails_open(5, 10));
    assert!(!rule.healthy(4, 10) && !rule.ready_fails_open(4, 10));
    assert!(!rule.healthy(2, 10) && rule.ready_fails_open(2, 10));
    // The minimum count: two of four serve, half, yet fewer than three.
    assert!(!rule.healthy(2, 4));
    // Validated: the removal share at or above the fail-open one, shares within 0..1.
    for bad in [
        HealthRule {
            ready_fail_open_share: 0.6,
            ..rule
        },
        HealthRule {
            healthy_share: 1.5,
            ..rule
        },
        HealthRule {
            shared_min: 0,
            ..rule
        },
    ] {
        assert!(bad.check().unwrap_err().is_invalid(), "{bad:?}");
    }
    // In a data center failing open, a failure of its own is excused, and said.
    let counts = DatacenterCounts::new(
        "east",
        Conditions {
            ok: 2,
            outage: 8,
            ..Conditions::default()
        },
        2,
    );
    let mut view = FleetView::from_counts(vec![counts], rule);
    view.own = Some(Own {
        datacenter: "east".into(),
        condition: CheckStatus::Outage,
        failing: Vec::new(),
    });
    assert!(view.datacenter("east").unwrap().ready_fail_open);
    let ready = view.readiness("east", "me", failing(false));
    assert!(ready.ready());
    let Some(status_core::ReadinessRule::Fleet(why)) = ready.rule() else {
        panic!("{ready:?}")
    };
    assert!(
        why.starts_with("only 2 of the 10 instances of east serve"),
        "{why}"
    );
    // Off by default.
    let view = FleetView::from_counts(
        vec![DatacenterCounts::new(
            "east",
            Conditions {
                outage: 10,
                ..Conditions::default()
            },
            0,
        )],
        HealthRule::default(),
    );
    assert!(!view.readiness("east", "me", failing(false)).ready());
}

#[test]
fn two_others_at_least_and_counts_past_the_fresh_instances_are_never_trusted() {
    let rule = HealthRule::default();
    assert!(!rule.shared(1, 1), "one other is never a quorum");
    assert!(rule.shared(2, 2) && rule.shared(2, 3) && !rule.shared(2, 4));
    assert!(!rule.shared(5, 4), "more failing than there are");
    let mut counts = DatacenterCounts::new(
        "east",
        Conditions {
            ok: 4,
            ..Conditions::default()
        },
        4,
    );
    let row = |dependency: &str, level, instances| DependencyCount {
        dependency: dependency.into(),
        level,
        instances,
    };
    counts.failing = vec![
        row("db", CheckStatus::Outage, 3),
        row("db", CheckStatus::Major, 2),
        row("disk", CheckStatus::Outage, 1),
        row("Bad Id", CheckStatus::Outage, 1),
        row("ok", CheckStatus::Ok, 1),
        row("none", CheckStatus::Major, 0),
    ];
    // db: 5 over its levels for 4 fresh instances, both rows go; and the garbage.
    assert_eq!(counts.sanitize(), 5);
    assert_eq!(counts.failing, [row("disk", CheckStatus::Outage, 1)]);
}
