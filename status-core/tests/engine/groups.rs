//! Probe groups: validated when registered, their conditions kept as the system's is.

use status_core::CheckStatus::{Major, Minor, Ok, Outage};
use status_core::{system_status, CheckStatus, Group, Rng, Urgency};

use crate::support::{registry, Logged, Mode, Steered};

#[tokio::test(start_paused = true)]
async fn groups_are_validated_when_registered() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "db", |d| d.tag("storage"));
    let group = |b: status_core::GroupBuilder| b.build().unwrap();

    let unknown_id = registry.add_group(group(Group::builder("g").dependency("nope")));
    assert!(unknown_id.unwrap_err().is_not_found());
    let unknown_tag = registry.add_group(group(Group::builder("g").tag("queue")));
    let err = unknown_tag.unwrap_err();
    assert!(
        err.is_invalid() && err.to_string().contains("queue"),
        "{err}"
    );
    assert!(Group::builder("empty").build().unwrap_err().is_invalid());
    assert!(Group::builder("Bad Name")
        .tag("x")
        .build()
        .unwrap_err()
        .is_invalid_id());
    assert!(Group::builder("twice")
        .dependency("db")
        .dependency("db")
        .build()
        .unwrap_err()
        .is_invalid());
    assert!(Group::builder("never")
        .tag("x")
        .fails_on(Ok)
        .build()
        .unwrap_err()
        .is_invalid());

    registry
        .add_group(group(Group::builder("storage").tag("storage")))
        .unwrap();
    let again = registry.add_group(group(Group::builder("storage").dependency("db")));
    assert!(again.unwrap_err().is_duplicate());
    assert_eq!(registry.groups().len(), 1, "nothing half-applied");
}

#[tokio::test(start_paused = true)]
async fn a_group_folds_its_members_and_judges_by_its_rule() {
    let registry = registry();
    let db = Steered::ok();
    let cache = Steered::ok();
    let search = Steered::ok();
    db.register(&registry, "db", |d| {
        d.urgency(Urgency::Required).failures_before_outage(1)
    });
    cache.register(&registry, "cache", |d| {
        d.urgency(Urgency::Strong)
            .tag("cache")
            .failures_before_outage(1)
    });
    search.register(&registry, "search", |d| d.urgency(Urgency::Weak));
    registry
        .add_group(Group::builder("cache").tag("cache").build().unwrap())
        .unwrap();
    registry
        .add_group(
            Group::builder("strict-db")
                .dependency("db")
                .fails_on(Minor)
                .rotation(false)
                .startup(false)
                .build()
                .unwrap(),
        )
        .unwrap();
    // Not checked yet: startup holds the cache group, not the one that ignores it.
    assert!(!registry.group_readiness("cache", false).unwrap().ready());
    registry.refresh_all().await;
    assert!(registry.group_readiness("cache", false).unwrap().ready());

    cache.set_status(Outage);
    registry.refresh("cache").await.unwrap();
    // Strong caps OUTAGE at MAJOR, in a group as in the system.
    assert_eq!(registry.group_condition("cache"), Some(Major));
    assert_eq!(registry.condition(), Major);
    assert!(registry.group_readiness("cache", false).unwrap().ready());
    let strict = registry.group_readiness("cache", true).unwrap();
    assert!(!strict.ready());
    assert_eq!(strict.reasons(), ["group cache is MAJOR: cache is OUTAGE"]);
    assert_eq!(registry.group_condition("strict-db"), Some(Ok));

    db.set_status(Minor);
    registry.refresh("db").await.unwrap();
    let db_group = registry.group_readiness("strict-db", false).unwrap();
    assert!(!db_group.ready(), "fails on MINOR");
    assert!(registry.group_readiness("cache", false).unwrap().ready());

    // A hold fails the groups that count holds only.
    registry.drain("deploy", None, None).unwrap();
    assert!(!registry.group_readiness("cache", false).unwrap().ready());
    db.set_status(Ok);
    registry.refresh("db").await.unwrap();
    assert!(registry
        .group_readiness("strict-db", false)
        .unwrap()
        .ready());

    // The group's report holds its members only.
    let report = registry.group_report("cache").unwrap();
    let ids: Vec<&str> = report.results().iter().map(|r| r.id().as_str()).collect();
    assert_eq!(ids, ["cache"]);
    assert_eq!(report.condition(), Major);
    assert!(registry.group_report("nope").is_none());
}

#[tokio::test(start_paused = true)]
async fn members_join_and_leave_and_the_counts_stay_right() {
    let registry = registry();
    let first = Steered::new(Mode::Status(Outage));
    first.register(&registry, "a", |d| d.tag("t"));
    registry
        .add_group(Group::builder("t").tag("t").build().unwrap())
        .unwrap();
    registry.refresh_all().await;
    assert_eq!(registry.group("t").unwrap().members(), 1);
    assert_eq!(registry.group_condition("t"), Some(Outage));
    // Registered later with the tag: it joins, unchecked (startup holds the group).
    let later = Steered::ok();
    later.register(&registry, "b", |d| d.tag("t"));
    let state = registry.group("t").unwrap();
    assert_eq!(state.members(), 2);
    assert!(!state.startup_complete());
    registry.refresh("b").await.unwrap();
    assert!(registry.group("t").unwrap().startup_complete());
    // The failing one leaves: the group is what is left.
    registry.remove("a").unwrap();
    assert_eq!(registry.group("t").unwrap().members(), 1);
    assert_eq!(registry.group_condition("t"), Some(Ok));
}

/// Random statuses, registrations and removals, and groups added in between: each group's
/// condition, kept as an atomic, always equals a fold of its members' results.
#[tokio::test(start_paused = true)]
async fn every_group_condition_equals_a_recount() {
    let mut rng = Rng::new(7);
    let statuses = [Ok, Minor, Major, Outage];
    let urgencies = [
        Urgency::Required,
        Urgency::Strong,
        Urgency::Weak,
        Urgency::None,
    ];
    let tags = ["x", "y", "z"];
    for round in 0..20 {
        let registry = registry();
        let mut checks: Vec<(String, Steered)> = Vec::new();
        let mut groups = 0;
        for step in 0..40 {
            match rng.below(10) {
                0..=3 => {
                    let id = format!("d{round}-{step}");
                    let check = Steered::new(Mode::Status(statuses[rng.below(4) as usize]));
                    let urgency = urgencies[rng.below(4) as usize];
                    let tag = tags[rng.below(3) as usize];
                    check.register(&registry, &id, |d| d.urgency(urgency).tag(tag));
                    checks.push((id, check));
                }
                4 if !checks.is_empty() => {
                    let (id, _) = checks.remove(rng.below(checks.len() as u64) as usize);
                    registry.remove(&id).unwrap();
                }
                5 if groups < 4 => {
                    let tag = tags[rng.below(3) as usize];
                    let builder = Group::builder(format!("g{groups}")).tag(tag);
                    let builder = match checks.first() {
                        Some((id, _)) if rng.below(2) == 0 => builder.dependency(id.as_str()),
                        _ => builder,
                    };
                    if registry.add_group(builder.build().unwrap()).is_ok() {
                        groups += 1;
                    }
                }
                _ if !checks.is_empty() => {
                    let (id, check) = &checks[rng.below(checks.len() as u64) as usize];
                    check.set_status(statuses[rng.below(4) as usize]);
                    registry.refresh(id).await.unwrap();
                }
                _ => {}
            }
            let report = registry.report();
            for state in registry.groups() {
                let members: Vec<_> = report
                    .results()
                    .iter()
                    .filter(|r| state.group().selects(r.info()))
                    .collect();
                let expected: CheckStatus =
                    system_status(members.iter().map(|r| (r.urgency(), r.status())));
                assert_eq!(state.condition(), expected, "round {round} step {step}");
                assert_eq!(state.members(), members.len(), "round {round} step {step}");
                let pending = members.iter().any(|r| !r.checked() && !r.passive());
                assert_eq!(
                    state.startup_complete(),
                    !pending,
                    "round {round} step {step}"
                );
            }
            assert_eq!(registry.condition(), report.condition());
        }
    }
}

/// A member whose urgency caps it better than what fails the group can never fail it by its
/// status: the group is added (strict readiness and holds still fail it), and a warning names
/// those members; a group whose members can fail it is added without a word.
#[tokio::test(start_paused = true)]
async fn a_group_its_members_can_never_fail_is_warned_about() {
    let (logged, _guard) = Logged::capture();
    let registry = registry();
    for (id, urgency) in [
        ("db", Urgency::Required),
        ("search", Urgency::Strong),
        ("cache", Urgency::Weak),
    ] {
        Steered::ok().register(&registry, id, |d| d.urgency(urgency));
    }
    let text = || logged.text();
    registry
        .add_group(Group::builder("fine").dependency("db").build().unwrap())
        .unwrap();
    assert!(!text().contains("WARN"), "{}", text());
    registry
        .add_group(
            Group::builder("mixed")
                .dependency("db")
                .dependency("search")
                .build()
                .unwrap(),
        )
        .unwrap();
    assert!(
        text().contains("members that can never fail this group by their status")
            && text().contains("search (STRONG)"),
        "{}",
        text()
    );
    tracing::callsite::rebuild_interest_cache();
    registry
        .add_group(
            Group::builder("capped")
                .dependency("search")
                .dependency("cache")
                .build()
                .unwrap(),
        )
        .unwrap();
    assert!(
        text().contains("no member can ever fail this group by its status"),
        "{}",
        text()
    );
    assert_eq!(registry.groups().len(), 3, "warned, not refused");
}
