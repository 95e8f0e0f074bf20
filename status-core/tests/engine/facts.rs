//! The registry's facts: computed once per report generation, root-aware maintenance,
//! membership from the folds, the serving verdict under the registry's policy, and one
//! intake that hands over the present after a lag.

use std::sync::Arc;
use std::time::Duration;

use status_core::{
    CheckStatus, Clock, Group, MuteWindow, Observed, Probes, Registry, ServePolicy, Urgency,
};

use crate::support::{epoch, registry, Mode, Steered};

fn down() -> Steered {
    Steered::new(Mode::Status(CheckStatus::Outage))
}

fn mute(registry: &Registry, id: &str) {
    registry
        .mute(
            id,
            MuteWindow::For(Duration::from_secs(3600)),
            "upgrade",
            None,
        )
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn maintenance_is_a_muted_root_and_what_fails_only_through_it() {
    let registry = registry();
    let (db, index, search, cache) = (down(), Steered::ok(), down(), Steered::ok());
    db.register(&registry, "db", |d| d);
    index.register(&registry, "index", |d| d);
    search.register(&registry, "search", |d| {
        d.urgency(Urgency::Strong)
            .depends_on("db")
            .depends_on("index")
    });
    cache.register(&registry, "cache", |d| d.urgency(Urgency::Weak));
    mute(&registry, "db");
    registry.refresh_all().await;

    let facts = registry.facts();
    let (db_f, search_f) = (
        facts.dependency("db").unwrap(),
        facts.dependency("search").unwrap(),
    );
    assert!(db_f.muted() && db_f.maintenance());
    assert!(
        !search_f.muted() && search_f.maintenance(),
        "fails only through db"
    );
    assert_eq!(search_f.impact(), CheckStatus::Major, "Strong caps OUTAGE");
    assert!(facts.maintenance());
    assert_eq!(
        facts.level(),
        CheckStatus::Outage,
        "the truth, muted or not"
    );
    assert!(!registry.readiness().ready(), "probes never lie for a mute");

    // A second root, not muted: search's failure is no longer the maintenance's alone.
    index.set_status(CheckStatus::Outage);
    registry.refresh_all().await;
    let facts = registry.facts();
    assert!(!facts.dependency("search").unwrap().maintenance());
    assert!(!facts.dependency("index").unwrap().maintenance());
    assert!(!facts.maintenance());

    // Back to one muted root, and an unrelated failure: the system is not in maintenance.
    index.set_status(CheckStatus::Ok);
    cache.set_status(CheckStatus::Outage);
    registry.refresh_all().await;
    let facts = registry.facts();
    assert!(facts.dependency("search").unwrap().maintenance());
    assert!(!facts.dependency("cache").unwrap().maintenance());
    assert!(!facts.maintenance());
}

#[tokio::test(start_paused = true)]
async fn groups_hold_the_members_the_folds_count_and_their_own_level_and_maintenance() {
    let registry = registry();
    let (db, cache) = (down(), Steered::ok());
    db.register(&registry, "db", |d| d.tag("store"));
    cache.register(&registry, "cache", |d| {
        d.urgency(Urgency::Weak).tag("store")
    });
    registry
        .add_group(Group::builder("stores").tag("store").build().unwrap())
        .unwrap();
    registry
        .add_group(Group::builder("db-only").dependency("db").build().unwrap())
        .unwrap();
    registry.refresh_all().await;
    let later = Steered::ok();
    later.register(&registry, "sessions", |d| d.tag("store"));
    registry.refresh_all().await;

    let facts = registry.facts();
    let stores = facts.group("stores").unwrap();
    let members: Vec<&str> = stores
        .members()
        .iter()
        .map(status_core::DependencyId::as_str)
        .collect();
    assert_eq!(
        members,
        ["cache", "db", "sessions"],
        "a member added later counts"
    );
    assert_eq!(stores.level(), CheckStatus::Outage);
    assert!(!stores.ready());
    assert!(!stores.maintenance());
    let db_f = facts.dependency("db").unwrap();
    let of: Vec<&str> = facts
        .groups_of(db_f)
        .map(status_core::GroupFacts::name)
        .collect();
    assert_eq!(of, ["stores", "db-only"]);
    // The group's level is the one the engine folds.
    assert_eq!(registry.group_condition("stores"), Some(stores.level()));

    mute(&registry, "db");
    let facts = registry.facts();
    assert!(facts.group("stores").unwrap().maintenance());
    assert!(facts.group("db-only").unwrap().maintenance());
}

#[tokio::test(start_paused = true)]
async fn facts_are_built_once_per_generation_and_shared() {
    let registry = registry();
    let db = Steered::ok();
    db.register(&registry, "db", |d| d);
    registry.refresh_all().await;
    let first = registry.facts();
    assert!(
        Arc::ptr_eq(&first, &registry.facts()),
        "nothing changed: shared"
    );
    db.set_status(CheckStatus::Outage);
    registry.refresh_all().await;
    let second = registry.facts();
    assert!(second.generation() > first.generation());
    assert_eq!(
        second.level(),
        CheckStatus::Minor,
        "hysteresis: the first failure"
    );
    // A drain moves the verdict without a new report: new facts too.
    registry
        .drain("deploy", Some(Duration::from_secs(60)), None)
        .unwrap();
    let drained = registry.facts();
    assert!(drained.generation() > second.generation());
    assert!(drained.drain().is_some() && !drained.serving());
}

#[tokio::test(start_paused = true)]
async fn the_serve_policy_is_the_registry_s_and_every_verdict_reads_it() {
    for (policy, serves_at_major) in [
        (ServePolicy::default(), true),
        (ServePolicy::failing_from(CheckStatus::Major), false),
    ] {
        let registry = Registry::builder()
            .clock(Clock::tokio_starting_at(epoch()))
            .jitter(0.0)
            .serve_policy(policy)
            .build();
        let search = down();
        search.register(&registry, "search", |d| d.urgency(Urgency::Strong));
        registry.refresh_all().await;
        assert_eq!(registry.serve_policy(), policy);
        let facts = registry.facts();
        assert_eq!(facts.level(), CheckStatus::Major);
        assert_eq!(facts.serving(), serves_at_major, "{policy:?}");
        assert_eq!(
            Probes::new(&registry).serving(),
            serves_at_major,
            "{policy:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_observer_gets_each_change_with_its_facts_and_the_present_after_a_lag() {
    let registry = Registry::builder()
        .clock(Clock::tokio_starting_at(epoch()))
        .jitter(0.0)
        .event_capacity(2)
        .build();
    let db = Steered::ok();
    db.register(&registry, "db", |d| d);
    registry.refresh_all().await;
    let mut observer = registry.observe();
    db.set_status(CheckStatus::Outage);
    registry.refresh("db").await.unwrap();
    let got = observer.next().await.unwrap();
    assert!(got.event().is_some());
    assert_eq!(
        got.facts().level(),
        CheckStatus::Minor,
        "as the change left it"
    );
    // Far more changes than the observer may fall behind by.
    for i in 0..10 {
        let status = if i % 2 == 0 {
            CheckStatus::Ok
        } else {
            CheckStatus::Outage
        };
        db.set_status(status);
        registry.refresh("db").await.unwrap();
    }
    let mut lagged = None;
    while let Some(next) = observer.try_next() {
        if let Observed::Lagged { missed, facts } = next {
            lagged = Some((missed, facts));
            break;
        }
    }
    let (missed, facts) = lagged.expect("a lag, said");
    assert!(missed > 0);
    assert_eq!(facts.level(), registry.report().condition(), "the present");
    drop(registry);
    assert!(observer.next().await.is_none(), "ends with the registry");
}
