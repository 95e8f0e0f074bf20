//! The fleet routes over a fixed view: the data-center endpoint's codes, and the metric.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use status_core::CheckStatus;
use status_fleet::{FailingDependency, FleetView, HealthRule, InstanceSummary};

use crate::support::{fixture, get};

fn view(west: CheckStatus) -> FleetView {
    let instance = |id: &str, dc: &str, condition| {
        (
            InstanceSummary::new(id, dc, condition, Vec::new(), "1.0"),
            Duration::ZERO,
        )
    };
    FleetView::new(
        vec![
            instance("e1", "east", CheckStatus::Outage),
            instance("w1", "west", west),
        ],
        Duration::from_secs(3),
        HealthRule::default(),
    )
}

#[tokio::test(start_paused = true)]
async fn gslb_gets_200_503_or_fail_open_and_404_for_strangers() {
    let f = fixture().await;
    let without = f.app();
    assert_eq!(get(&without, "/fleet").await.status, StatusCode::NOT_FOUND);
    // A person at a browser gets a page that says what to configure, not raw JSON.
    let no_page = get(&without, "/status/fleet").await;
    assert_eq!(no_page.status, StatusCode::NOT_FOUND);
    assert!(no_page.header("content-type").starts_with("text/html"));
    assert!(no_page.body.contains("--fleet-redis"), "{}", no_page.body);

    let one_healthy = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(view(CheckStatus::Ok)))
        .build();
    let east = get(&one_healthy, "/fleet/datacenters/east").await;
    assert_eq!(east.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        east.body
            .starts_with(r#"{"condition":"OUTAGE","datacenter":"east""#),
        "{}",
        east.body
    );
    let west = get(&one_healthy, "/fleet/datacenters/west").await;
    assert_eq!(west.status, StatusCode::OK);
    assert_eq!(west.json()["failOpen"], false);
    let unknown = get(&one_healthy, "/fleet/datacenters/north").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.json()["error"].as_str().unwrap().contains("north"));
    let fleet = get(&one_healthy, "/fleet").await;
    assert_eq!(fleet.status, StatusCode::OK);
    assert_eq!(fleet.json()["datacenters"].as_array().unwrap().len(), 2);
    let metrics = get(&one_healthy, "/metrics").await.body;
    assert!(
        metrics.contains(r#"status_fleet_datacenter_healthy{dc="east"} 0"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"status_fleet_datacenter_healthy{dc="west"} 1"#),
        "{metrics}"
    );

    let page = get(&one_healthy, "/status/fleet").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page
        .header("content-security-policy")
        .contains("default-src 'none'"));
    for expected in [
        r#"id="dc-east" data-healthy="false""#,
        r#"id="dc-west" data-healthy="true""#,
        r#"<tr data-instance="e1" data-stale="false">"#,
        "✖ unhealthy",
        "in rotation",
    ] {
        assert!(
            page.body.contains(expected),
            "no {expected} in {}",
            page.body
        );
    }
    assert!(!page.body.contains("fleet-fail-open"));
    assert_eq!(
        get(&without, "/status/fleet").await.status,
        StatusCode::NOT_FOUND
    );

    let none_healthy = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(view(CheckStatus::Outage)))
        .build();
    for dc in ["east", "west"] {
        let answer = get(&none_healthy, &format!("/fleet/datacenters/{dc}")).await;
        assert_eq!(answer.status, StatusCode::OK, "failing open");
        assert_eq!(answer.json()["failOpen"], true);
        assert_eq!(answer.json()["healthy"], false);
    }
    let page = get(&none_healthy, "/status/fleet").await.body;
    assert!(page.contains(r#"id="fleet-fail-open""#) && page.contains("▲ failing open"));
}

#[tokio::test(start_paused = true)]
async fn fleet_aware_readiness_leaves_a_shared_failure_to_the_datacenter() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let dc = |others: CheckStatus| {
        move || {
            // Each instance in OUTAGE publishes why: db.
            let i = |id: &str, c| {
                let failing = if c == CheckStatus::Outage {
                    vec![FailingDependency::new("db", CheckStatus::Outage)]
                } else {
                    Vec::new()
                };
                (
                    InstanceSummary::new(id, "east", c, Vec::new(), "1.0").with_failing(failing),
                    Duration::ZERO,
                )
            };
            Arc::new(FleetView::new(
                vec![
                    i("me", CheckStatus::Outage),
                    i("e2", others),
                    i("e3", others),
                ],
                Duration::from_secs(3),
                HealthRule::default(),
            ))
        }
    };
    // Alone in its failure: not ready, by the instance's rule.
    let alone = status_http::Routes::new(&f.registry)
        .fleet(dc(CheckStatus::Ok))
        .fleet_aware_readiness("me", "east")
        .build();
    let ready = get(&alone, "/healthcheck/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ready.json()["rule"], "instance");
    // The whole data center shares it: ready, the data center's endpoint decides.
    let shared = status_http::Routes::new(&f.registry)
        .fleet(dc(CheckStatus::Outage))
        .fleet_aware_readiness("me", "east")
        .build();
    let ready = get(&shared, "/healthcheck/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["rule"], "fleet");
    assert!(ready.json()["reasons"][0]
        .as_str()
        .unwrap()
        .contains("db OUTAGE is shared: 2 of the 2 other instances of east fail it too"));
    assert_eq!(
        get(&shared, "/fleet/datacenters/east").await.status,
        StatusCode::OK,
        "failing open: the only one"
    );
    let text = get(&shared, "/healthcheck/ready?verbose").await.body;
    assert!(text.contains("[+]fleet ok: db OUTAGE is shared"), "{text}");
    // A hold still fails it.
    f.registry.drain("deploy", None, None).unwrap();
    assert_eq!(
        get(&shared, "/healthcheck/ready").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // Without the option, no rule is named.
    let plain = status_http::Routes::new(&f.registry)
        .fleet(dc(CheckStatus::Outage))
        .build();
    assert!(get(&plain, "/healthcheck/ready")
        .await
        .json()
        .get("rule")
        .is_none());
}

#[tokio::test(start_paused = true)]
async fn instances_are_listed_a_page_at_a_time_and_bad_pages_refused() {
    let f = fixture().await;
    let app = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(view(CheckStatus::Ok)))
        .build();
    let first = get(&app, "/fleet?limit=1").await;
    assert_eq!(first.status, StatusCode::OK);
    let json = first.json();
    assert_eq!(json["instances"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["instances"][0]["instanceId"], "e1");
    let cursor = json["nextCursor"].as_str().expect("a next page").to_owned();
    let second = get(&app, &format!("/fleet?limit=1&cursor={cursor}"))
        .await
        .json();
    assert_eq!(second["instances"][0]["instanceId"], "w1");
    assert!(
        second.get("nextCursor").is_none(),
        "the last page: {second}"
    );
    let west = get(&app, "/fleet?datacenter=west").await.json();
    let ids: Vec<_> = west["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["instanceId"].clone())
        .collect();
    assert_eq!(ids, ["w1"]);
    assert_eq!(
        west["datacenters"].as_array().unwrap().len(),
        2,
        "the data centers stay whole"
    );
    for bad in [
        "/fleet?limit=0",
        "/fleet?limit=501",
        "/fleet?limit=x",
        "/fleet?cursor=zz",
        "/status/fleet?limit=0",
    ] {
        let answer = get(&app, bad).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{bad}: {}",
            answer.body
        );
        assert!(answer.json()["error"].is_string(), "{bad}");
    }
    // The landing page lists the data centers in trouble (east), not the healthy ones
    // (west: a count and a link).
    let page = get(&app, "/status/fleet?limit=1").await.body;
    assert!(page.contains(r#"data-instance="e1""#) && !page.contains(r#"data-instance="w1""#));
    assert!(
        page.contains(r#"class="fleet-unlisted-dc" data-fresh="1""#)
            && page.contains(r#"href="?datacenter=west""#),
        "{page}"
    );
    // A cursor pages through every data center, a page at a time.
    let page = get(&app, "/status/fleet?limit=1&cursor=0").await.body;
    assert!(
        page.contains(r#"id="fleet-next" href="?cursor=1&#38;limit=1""#),
        "{page}"
    );
    assert!(page.contains(r#"data-instance="e1""#) && !page.contains(r#"data-instance="w1""#));
}

/// A source whose store is down: its last view, stale, and no listing.
struct StoreDown(Arc<FleetView>);

impl status_fleet::FleetSource for StoreDown {
    fn view(&self) -> Arc<FleetView> {
        Arc::clone(&self.0)
    }

    fn instances(
        &self,
        _: status_fleet::InstanceQuery,
    ) -> status_fleet::Boxed<'_, Result<status_fleet::InstancePage, status_core::Error>> {
        Box::pin(async {
            Err(status_core::Error::unavailable(
                "the fleet store failed: refused",
            ))
        })
    }
}

/// With the store down, `/fleet` still serves the last view, marked stale, and says the
/// instances cannot be listed; a data center a stale view does not know fails open rather
/// than answering 404 (unknown because unreachable); a fresh view still answers 404.
#[tokio::test(start_paused = true)]
async fn a_store_down_serves_the_last_view_and_unknown_datacenters_fail_open() {
    let f = fixture().await;
    let down = status_http::Routes::new(&f.registry)
        .fleet(StoreDown(Arc::new(view(CheckStatus::Ok).into_stale())))
        .build();
    let fleet = get(&down, "/fleet").await;
    assert_eq!(fleet.status, StatusCode::OK, "{}", fleet.body);
    let body = fleet.json();
    assert_eq!(body["stale"], true);
    assert_eq!(body["datacenters"].as_array().unwrap().len(), 2);
    assert_eq!(body["instances"], serde_json::json!([]));
    assert_eq!(
        body["instancesUnavailable"],
        "the fleet store failed: refused"
    );
    let north = get(&down, "/fleet/datacenters/north").await;
    assert_eq!(north.status, StatusCode::OK, "{}", north.body);
    assert!(north
        .body
        .starts_with(r#"{"condition":"OK","datacenter":"north""#));
    assert_eq!(
        (
            north.json()["failOpen"].clone(),
            north.json()["stale"].clone()
        ),
        (true.into(), true.into())
    );
    let fresh = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(view(CheckStatus::Ok)))
        .build();
    assert_eq!(
        get(&fresh, "/fleet/datacenters/north").await.status,
        StatusCode::NOT_FOUND
    );
}

/// dc-0: three healthy instances; dc-1: `primary-db` OUTAGE on two of three (shared), and
/// `cache` MINOR on one (its own).
fn troubled_fleet() -> FleetView {
    let db = || FailingDependency::new("primary-db", CheckStatus::Outage);
    let i = |id: &str, dc: &str, c, failing: Vec<FailingDependency>| {
        (
            InstanceSummary::new(id, dc, c, Vec::new(), "1.0").with_failing(failing),
            Duration::ZERO,
        )
    };
    FleetView::new(
        vec![
            i("a1", "dc-0", CheckStatus::Ok, Vec::new()),
            i("a2", "dc-0", CheckStatus::Ok, Vec::new()),
            i("a3", "dc-0", CheckStatus::Ok, Vec::new()),
            i("b1", "dc-1", CheckStatus::Outage, vec![db()]),
            i(
                "b2",
                "dc-1",
                CheckStatus::Outage,
                vec![db(), FailingDependency::new("cache", CheckStatus::Minor)],
            ),
            i("b3", "dc-1", CheckStatus::Ok, Vec::new()),
        ],
        Duration::from_secs(3),
        HealthRule::default(),
    )
}

#[tokio::test(start_paused = true)]
async fn what_fails_leads_the_fleet_page_and_has_its_own_route() {
    let f = fixture().await;
    let app = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(troubled_fleet()))
        .build();
    let answer = get(&app, "/fleet/dependencies").await;
    assert_eq!(answer.status, StatusCode::OK);
    let json = answer.json();
    assert_eq!(json["stale"], false);
    assert_eq!(
        json["dependencies"][0],
        serde_json::json!({"datacenter": "dc-1", "dependency": "primary-db", "level": "OUTAGE",
            "instances": 2, "fresh": 3, "shared": true}),
        "{json}"
    );
    assert_eq!(json["dependencies"][1]["dependency"], "cache");
    assert_eq!(json["dependencies"][1]["shared"], false);
    assert_eq!(json["dependencies"].as_array().unwrap().len(), 2);
    // Also in the data center's own answer.
    let dc1 = get(&app, "/fleet/datacenters/dc-1").await.json();
    assert_eq!(dc1["failing"][0]["dependency"], "primary-db", "{dc1}");

    let page = get(&app, "/status/fleet").await.body;
    let at = |needle: &str| {
        page.find(needle)
            .unwrap_or_else(|| panic!("no {needle} in {page}"))
    };
    // What fails first, then the worst data center, then the healthy one.
    assert!(at(r#"id="fleet-failing""#) < at(r#"id="dc-dc-1""#));
    assert!(at(r#"id="dc-dc-1""#) < at(r#"id="dc-dc-0""#));
    assert!(page.contains("primary-db OUTAGE on 2 of 3 in dc-1, shared"));
    // In dc-1, the instances in trouble are listed, with what they fail; the healthy one is
    // collapsed to a count, as are dc-0's three.
    assert!(page.contains("primary-db OUTAGE, cache MINOR"), "{page}");
    assert!(at(r#"<tr data-instance="b2""#) < at(r#"data-count="1""#));
    // dc-0, healthy, is not listed on the landing page: a count and a link.
    assert!(page.contains(r#"data-fresh="3""#), "{page}");
    assert!(page.contains(r#"href="?datacenter=dc-0""#), "{page}");
    // Asked for, it is listed, its healthy instances collapsed to a count.
    let dc0 = get(&app, "/status/fleet?datacenter=dc-0").await.body;
    assert!(dc0.contains(r#"data-count="3""#), "{dc0}");
    assert!(dc0.contains("3 healthy instances on this page"));

    // Without a fleet view: 404 with a JSON error.
    let without = status_http::Routes::new(&f.registry).build();
    assert_eq!(
        get(&without, "/fleet/dependencies").await.status,
        StatusCode::NOT_FOUND
    );
    // A stale view still answers its last rows, marked stale.
    let stale = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(troubled_fleet().into_stale()))
        .build();
    let json = get(&stale, "/fleet/dependencies").await.json();
    assert_eq!(json["stale"], true);
    assert_eq!(json["dependencies"].as_array().unwrap().len(), 2);
}

/// A source that counts who looked at what fails across the fleet.
struct Looked {
    view: Arc<FleetView>,
    looks: Arc<std::sync::atomic::AtomicUsize>,
}

impl status_fleet::FleetSource for Looked {
    fn view(&self) -> Arc<FleetView> {
        Arc::clone(&self.view)
    }

    fn instances(
        &self,
        _query: status_fleet::InstanceQuery,
    ) -> status_fleet::Boxed<'_, Result<status_fleet::InstancePage, status_core::Error>> {
        Box::pin(std::future::ready(
            Ok(status_fleet::InstancePage::default()),
        ))
    }

    fn look(&self) {
        self.looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A person or a tool reading what fails across the fleet (`/fleet`, its page, the
/// dependencies' route) is told to the source, so that a large fleet's store sends this
/// instance the whole list; a balancer polling a data center, or a scrape, is not (every
/// instance would then be sent it, which is what the budget prevents).
#[tokio::test(start_paused = true)]
async fn people_looking_at_the_fleet_are_told_to_the_source_balancers_are_not() {
    let f = fixture().await;
    let looks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = status_http::Routes::new(&f.registry)
        .fleet(Looked {
            view: Arc::new(view(CheckStatus::Ok)),
            looks: Arc::clone(&looks),
        })
        .build();
    let count = || looks.load(std::sync::atomic::Ordering::SeqCst);
    for path in [
        "/fleet/datacenters/east",
        "/fleet/datacenters/west",
        "/metrics",
    ] {
        get(&app, path).await;
    }
    assert_eq!(count(), 0, "balancers and scrapes are not people");
    assert_eq!(get(&app, "/fleet").await.status, StatusCode::OK);
    assert_eq!(count(), 1);
    assert_eq!(
        get(&app, "/fleet/dependencies").await.status,
        StatusCode::OK
    );
    assert_eq!(count(), 2);
    let page = get(&app, "/status/fleet").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(count(), 3);
    assert!(
        !page.body.contains("fleet-failing-partial"),
        "{}",
        page.body
    );

    // A view whose failing rows are this instance's own only (a large fleet, no one looking
    // until now): said on the page and in the JSON, so that no one reads it as the fleet's.
    let mut partial = view(CheckStatus::Ok);
    partial.failing_partial = true;
    let app = status_http::Routes::new(&f.registry)
        .fleet(Looked {
            view: Arc::new(partial),
            looks: Arc::clone(&looks),
        })
        .build();
    let page = get(&app, "/status/fleet").await;
    assert!(
        page.body.contains(r#"id="fleet-failing-partial""#),
        "{}",
        page.body
    );
    assert_eq!(get(&app, "/fleet").await.json()["failingPartial"], true);
    let whole = status_http::Routes::new(&f.registry)
        .fleet(|| Arc::new(view(CheckStatus::Ok)))
        .build();
    let json = get(&whole, "/fleet").await.json();
    assert!(json.get("failingPartial").is_none(), "{json}");
}
