//! Probe endpoints and their views.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use status_core::CheckStatus;

use crate::support::{fixture, get, unchecked};

#[tokio::test(start_paused = true)]
async fn detailed_report_shape_and_codes() {
    let f = fixture().await;
    let app = f.app();
    let ok = get(&app, "/healthcheck").await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(ok.header("content-type"), "application/json");
    assert_eq!(ok.header("cache-control"), "no-store");
    let json = ok.json();
    assert_eq!(json["condition"], "OK");
    assert_eq!(json["dcStatus"], "OK");
    assert_eq!(json["results"]["OK"].as_array().unwrap().len(), 3);

    f.set(&f.db, CheckStatus::Outage).await;
    let outage = get(&app, "/healthcheck").await;
    assert_eq!(outage.status, StatusCode::SERVICE_UNAVAILABLE);
    insta::assert_snapshot!("detailed_outage", outage.body);
}

#[tokio::test(start_paused = true)]
async fn strict_fails_anything_but_ok() {
    let f = fixture().await;
    f.set(&f.cache, CheckStatus::Major).await; // Weak: system MINOR
    let app = f.app();
    assert_eq!(get(&app, "/healthcheck").await.status, StatusCode::OK);
    assert_eq!(
        get(&app, "/healthcheck?strict=true").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        get(&app, "/healthcheck?strict=false").await.status,
        StatusCode::OK
    );
    let bad = get(&app, "/healthcheck?strict=maybe").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        bad.json()["error"],
        "strict must be true or false, not \"maybe\""
    );
}

#[tokio::test(start_paused = true)]
async fn health_json_by_query_in_every_spelling_and_by_accept() {
    let f = fixture().await;
    f.set(&f.search, CheckStatus::Outage).await; // Strong: system MAJOR
    let app = f.app();
    for uri in [
        "/healthcheck?format=health%2Bjson",
        "/healthcheck?format=health+json",
        "/healthcheck?format=health%20json",
    ] {
        let answer = get(&app, uri).await;
        assert_eq!(answer.status, StatusCode::OK, "{uri}");
        assert_eq!(
            answer.header("content-type"),
            "application/health+json",
            "{uri}"
        );
        assert_eq!(answer.json()["status"], "warn", "{uri}");
    }
    let by_accept = crate::support::call(
        &app,
        Request::get("/healthcheck")
            .header("accept", "application/health+json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(by_accept.header("content-type"), "application/health+json");
    insta::assert_snapshot!("health_json", by_accept.body);

    let unknown = get(&app, "/healthcheck?format=xml").await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert!(unknown.json()["error"]
        .as_str()
        .unwrap()
        .contains("unknown format"));
}

#[tokio::test(start_paused = true)]
async fn verbose_text() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = f.app();
    let answer = get(&app, "/healthcheck?verbose").await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(answer.header("content-type").starts_with("text/plain"));
    insta::assert_snapshot!("verbose", answer.body);
    assert_eq!(
        get(&app, "/healthcheck?verbose=true").await.body,
        answer.body
    );
}

#[tokio::test(start_paused = true)]
async fn exclude_leaves_dependencies_out_of_the_answer() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = f.app();
    let answer = get(&app, "/healthcheck?exclude=db,unknown").await;
    assert_eq!(answer.status, StatusCode::OK);
    let json = answer.json();
    assert_eq!(json["condition"], "OK");
    assert!(!answer.body.contains("\"id\":\"db\""));
    let summary = get(&app, "/healthcheck/summary?exclude=db").await;
    assert_eq!(summary.status, StatusCode::OK);
    let ready = get(&app, "/healthcheck/ready?exclude=db").await;
    assert_eq!(ready.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn summary_puts_condition_first_and_fails_only_on_outage() {
    let f = fixture().await;
    let app = f.app();
    f.set(&f.cache, CheckStatus::Outage).await;
    let minor = get(&app, "/healthcheck/summary").await;
    assert_eq!(minor.status, StatusCode::OK);
    assert!(
        minor.body.starts_with("{\"condition\":\"MINOR\""),
        "{}",
        minor.body
    );
    insta::assert_snapshot!("summary_minor", minor.body);

    f.set(&f.db, CheckStatus::Outage).await;
    let outage = get(&app, "/healthcheck/summary").await;
    assert_eq!(outage.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(outage
        .body
        .starts_with("{\"condition\":\"OUTAGE\",\"dcStatus\":\"FAILOVER\""));
}

#[tokio::test(start_paused = true)]
async fn liveness_never_depends_on_dependencies_or_drain() {
    let f = fixture().await;
    let app = f.app();
    f.set(&f.db, CheckStatus::Outage).await;
    f.registry.drain("maintenance", None, None).unwrap();
    let live = get(&app, "/healthcheck/live").await;
    assert_eq!(live.status, StatusCode::OK);
    assert_eq!(live.json()["live"], true);
}

#[tokio::test(start_paused = true)]
async fn readiness_waits_for_startup_and_fails_on_outage_and_drain() {
    let f = unchecked();
    let app = f.app();
    let before = get(&app, "/healthcheck/ready").await;
    assert_eq!(before.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(before.json()["startupComplete"], false);
    let startup = get(&app, "/healthcheck/startup").await;
    assert_eq!(startup.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(startup.json()["pending"].as_array().unwrap().len(), 3);

    f.registry.refresh_all().await;
    assert_eq!(
        get(&app, "/healthcheck/startup").await.status,
        StatusCode::OK
    );
    let ready = get(&app, "/healthcheck/ready").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["ready"], true);

    f.set(&f.search, CheckStatus::Outage).await; // MAJOR: still ready
    assert_eq!(get(&app, "/healthcheck/ready").await.status, StatusCode::OK);
    assert_eq!(
        get(&app, "/healthcheck/ready?strict=true").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );

    f.set(&f.db, CheckStatus::Outage).await;
    let outage = get(&app, "/healthcheck/ready").await;
    assert_eq!(outage.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        outage.json()["reasons"][0],
        "system is OUTAGE: db is OUTAGE"
    );

    f.set(&f.db, CheckStatus::Ok).await;
    f.registry.drain("deploy", None, None).unwrap();
    let draining = get(&app, "/healthcheck/ready?verbose").await;
    assert_eq!(draining.status, StatusCode::SERVICE_UNAVAILABLE);
    insta::assert_snapshot!("ready_draining_verbose", draining.body);
}

#[tokio::test(start_paused = true)]
async fn one_dependency_with_its_history() {
    let f = fixture().await;
    let app = f.app();
    let answer = get(&app, "/healthcheck/dependencies/db").await;
    assert_eq!(answer.status, StatusCode::OK);
    let json = answer.json();
    assert_eq!(json["id"], "db");
    assert_eq!(json["status"], "OK");
    assert_eq!(json["history"]["uptime"]["hour"], 1.0);
    assert_eq!(json["history"]["transitions"][0]["to"], "OK");

    f.set(&f.db, CheckStatus::Outage).await;
    let outage = get(&app, "/healthcheck/dependencies/db").await;
    assert_eq!(outage.status, StatusCode::SERVICE_UNAVAILABLE);

    for unknown in ["nope", "NOT-VALID", "%3Cscript%3E"] {
        let missing = get(&app, &format!("/healthcheck/dependencies/{unknown}")).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND, "{unknown}");
        assert!(missing.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("no dependency"));
    }
}

#[tokio::test(start_paused = true)]
async fn public_view_withholds_error_detail() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = status_http::Routes::new(&f.registry)
        .public_view(true)
        .build();
    let answer = get(&app, "/healthcheck").await;
    let json = answer.json();
    let db = &json["results"]["OUTAGE"][0];
    assert_eq!(db["errorMessage"], "OUTAGE");
    assert!(db.get("thrown").is_none());
    assert!(!answer.body.contains("says OUTAGE"));
    assert!(answer.body.contains("says OK"), "OK messages are kept");
}

#[tokio::test(start_paused = true)]
async fn the_router_can_name_the_application() {
    let f = fixture().await;
    let app = status_http::Routes::new(&f.registry)
        .appname("storefront")
        .build();
    assert_eq!(
        get(&app, "/healthcheck").await.json()["appname"],
        "storefront"
    );
    assert_eq!(
        get(&app, "/healthcheck/summary").await.json()["appname"],
        "storefront"
    );
    assert_eq!(
        f.registry.report().appname(),
        "test-app",
        "the registry is unchanged"
    );
}

#[tokio::test(start_paused = true)]
async fn wrong_methods_are_refused() {
    let f = fixture().await;
    let app = f.app();
    let answer = crate::support::call(
        &app,
        Request::post("/healthcheck").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(start_paused = true)]
async fn liveness_fails_only_under_the_cullers_hold() {
    use status_core::HoldSource;

    let f = fixture().await;
    let app = f.app();
    f.registry
        .hold(HoldSource::Operator, "deploy", None, None)
        .unwrap();
    assert_eq!(
        get(&app, "/healthcheck/live").await.status,
        StatusCode::OK,
        "a drain is no cull"
    );
    f.registry
        .hold(
            HoldSource::Cull,
            "culled: 57 failures in 60 s",
            None,
            Some("culler"),
        )
        .unwrap();
    let live = get(&app, "/healthcheck/live").await;
    assert_eq!(live.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(live.json()["live"], false);
    assert_eq!(live.json()["culled"], "culled: 57 failures in 60 s");
    let text = get(&app, "/healthcheck/live?verbose").await;
    assert_eq!(text.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        text.body.starts_with("[-]cull failed: culled: 57"),
        "{}",
        text.body
    );
    assert!(f.registry.release(HoldSource::Cull));
    assert_eq!(get(&app, "/healthcheck/live").await.status, StatusCode::OK);
}
