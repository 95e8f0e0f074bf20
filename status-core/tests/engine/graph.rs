//! Failures name their failing ancestors.

use status_core::{CheckStatus, DependencyId};

use crate::support::{registry, Steered};

fn ids(list: &[DependencyId]) -> Vec<&str> {
    list.iter().map(DependencyId::as_str).collect()
}

#[tokio::test(start_paused = true)]
async fn a_failing_child_names_the_root_cause() {
    let registry = registry();
    let network = Steered::new(crate::support::Mode::Status(CheckStatus::Outage));
    let db = Steered::new(crate::support::Mode::Status(CheckStatus::Outage));
    let app = Steered::new(crate::support::Mode::Status(CheckStatus::Major));
    network.register(&registry, "network", |d| d);
    db.register(&registry, "db", |d| d.depends_on("network"));
    app.register(&registry, "app", |d| d.depends_on("db"));

    let report = registry.refresh_all().await;
    assert!(report.result("network").unwrap().blocked_by().is_empty());
    assert_eq!(ids(report.result("db").unwrap().blocked_by()), ["network"]);
    assert_eq!(ids(report.result("app").unwrap().blocked_by()), ["network"]);
    assert_eq!(
        ids(registry.result("app").unwrap().blocked_by()),
        ["network"]
    );

    network.set_status(CheckStatus::Ok);
    registry.refresh("network").await.unwrap();
    let report = registry.report();
    assert!(report.result("db").unwrap().blocked_by().is_empty());
    assert_eq!(ids(report.result("app").unwrap().blocked_by()), ["db"]);

    db.set_status(CheckStatus::Ok);
    app.set_status(CheckStatus::Ok);
    registry.refresh_all().await;
    assert!(registry
        .report()
        .results()
        .iter()
        .all(|r| r.blocked_by().is_empty()));
}

#[tokio::test(start_paused = true)]
async fn cycles_are_rejected() {
    let registry = registry();
    let check = Steered::ok();
    check.register(&registry, "a", |d| d.depends_on("b"));
    let err = registry
        .add(check.dependency("b").depends_on("a").build().unwrap())
        .unwrap_err();
    assert!(err.is_cycle(), "{err}");
    assert!(!registry.contains("b"));
}

#[tokio::test(start_paused = true)]
async fn one_result_finds_the_same_causes_as_the_report() {
    use crate::support::Mode::Status;
    // A diamond over two roots, one of them healthy: root-a and root-b under mid-1 and
    // mid-2, both under top; a leaf under top.
    let registry = registry();
    let statuses = [
        ("root-a", CheckStatus::Outage),
        ("root-b", CheckStatus::Ok),
        ("mid-1", CheckStatus::Major),
        ("mid-2", CheckStatus::Outage),
        ("top", CheckStatus::Minor),
        ("leaf", CheckStatus::Outage),
    ];
    let parents: [&[&str]; 6] = [
        &[],
        &[],
        &["root-a", "root-b"],
        &["root-b"],
        &["mid-1", "mid-2"],
        &["top"],
    ];
    let checks: Vec<Steered> = statuses
        .iter()
        .map(|(_, s)| Steered::new(Status(*s)))
        .collect();
    for ((check, (id, _)), above) in checks.iter().zip(statuses).zip(parents) {
        check.register(&registry, id, |mut d| {
            for parent in above {
                d = d.depends_on(*parent);
            }
            d
        });
    }
    registry.refresh_all().await;
    // Ask for one result before the report: it walks the ancestors alone.
    let leaf = registry.result("leaf").unwrap();
    assert_eq!(ids(leaf.blocked_by()), ["mid-2", "root-a"]);
    let report = registry.report();
    for (id, _) in statuses {
        assert_eq!(
            registry.result(id).unwrap().blocked_by(),
            report.result(id).unwrap().blocked_by(),
            "{id}"
        );
    }
}
