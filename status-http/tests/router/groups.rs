//! Probe groups over HTTP: their detailed route and summary, readiness bound to one, their
//! metric, the dashboard's filter, and the public view.

use axum::http::StatusCode;
use status_core::{CheckStatus, Group};

use crate::support::{fixture, get, Fixture, TOKEN};

/// `search-only` (search, failing on MAJOR, holds ignored) and `writes-path` (db and
/// search, the defaults).
async fn grouped() -> Fixture {
    let f = fixture().await;
    f.registry
        .add_group(
            Group::builder("search-only")
                .dependency("search")
                .fails_on(CheckStatus::Major)
                .rotation(false)
                .build()
                .unwrap(),
        )
        .unwrap();
    f.registry
        .add_group(
            Group::builder("writes-path")
                .dependency("db")
                .dependency("search")
                .build()
                .unwrap(),
        )
        .unwrap();
    f
}

#[tokio::test(start_paused = true)]
async fn a_group_answers_by_its_own_rule() {
    let f = grouped().await;
    let app = f.app();
    // Passing: the group, its condition, no reasons; the same bytes (and ETag) every time.
    let passing = get(&app, "/healthcheck/groups/search-only/summary").await;
    assert_eq!(passing.status, StatusCode::OK);
    let body = passing.json();
    assert_eq!(
        (
            &body["group"],
            &body["ready"],
            &body["condition"],
            &body["reasons"]
        ),
        (
            &serde_json::json!("search-only"),
            &serde_json::json!(true),
            &serde_json::json!("OK"),
            &serde_json::json!([])
        )
    );
    let etag = passing.header("etag").to_owned();
    assert!(!etag.is_empty());
    let again = crate::support::call(
        &app,
        axum::http::Request::get("/healthcheck/groups/search-only/summary")
            .header("if-none-match", &etag)
            .body(axum::body::Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    let text = get(&app, "/healthcheck/groups/search-only/summary?verbose").await;
    assert_eq!(
        text.body,
        "[+]condition ok\n[+]startup ok\n[+]drain ok\ngroup search-only check passed\n"
    );
    let detailed = get(&app, "/healthcheck/groups/search-only").await;
    assert_eq!(detailed.status, StatusCode::OK);
    let ids: Vec<String> = detailed.json()["results"]["OK"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["search"], "its members only");
    // Made once per report generation: the same bytes and ETag until something changes.
    let etag = detailed.header("etag").to_owned();
    let again = get(&app, "/healthcheck/groups/search-only").await;
    assert_eq!(
        (again.header("etag"), &again.body),
        (etag.as_str(), &detailed.body)
    );

    f.set(&f.search, CheckStatus::Major).await;
    // The system is MAJOR and passes; the group fails on MAJOR.
    assert_eq!(get(&app, "/healthcheck").await.status, StatusCode::OK);
    let detailed = get(&app, "/healthcheck/groups/search-only").await;
    assert_eq!(detailed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_ne!(
        detailed.header("etag"),
        etag,
        "a new generation, a new body"
    );
    assert_eq!(detailed.json()["condition"], "MAJOR");
    let summary = get(&app, "/healthcheck/groups/search-only/summary").await;
    assert_eq!(summary.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = summary.json();
    assert_eq!(body["group"], "search-only");
    assert_eq!(body["ready"], false);
    assert_eq!(
        body["reasons"][0],
        "group search-only is MAJOR: search is MAJOR"
    );
    let text = get(&app, "/healthcheck/groups/search-only/summary?verbose").await;
    assert!(
        text.body.ends_with("group search-only check failed\n"),
        "{}",
        text.body
    );
    // The other group fails on OUTAGE only; with `strict`, on anything but OK.
    let writes = "/healthcheck/groups/writes-path";
    assert_eq!(get(&app, writes).await.status, StatusCode::OK);
    assert_eq!(
        get(&app, &format!("{writes}/summary")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(&app, &format!("{writes}?strict")).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // Every format of the detailed report.
    let verbose = get(&app, &format!("{writes}?format=text")).await;
    assert!(
        verbose.body.contains("[+]search degraded (MAJOR)"),
        "{}",
        verbose.body
    );
    assert!(!verbose.body.contains("cache"), "{}", verbose.body);
    let health = get(&app, &format!("{writes}?format=health%2Bjson")).await;
    assert_eq!(health.header("content-type"), "application/health+json");

    // A hold fails the group that counts holds, not the one that ignores them.
    f.set(&f.search, CheckStatus::Ok).await;
    f.registry.drain("deploy", None, None).unwrap();
    assert_eq!(
        get(&app, &format!("{writes}/summary")).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        get(&app, "/healthcheck/groups/search-only/summary")
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test(start_paused = true)]
async fn an_unknown_group_is_a_json_404() {
    let f = grouped().await;
    let app = f.app();
    for path in [
        "/healthcheck/groups/nope",
        "/healthcheck/groups/nope/summary",
    ] {
        let answer = get(&app, path).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path}");
        assert!(answer.json()["error"].as_str().unwrap().contains("nope"));
    }
    for path in [
        "/healthcheck/groups/search-only?strict=maybe",
        "/healthcheck/groups/search-only/summary?strict=maybe",
    ] {
        let bad = get(&app, path).await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{path}");
        assert!(bad.json()["error"].as_str().unwrap().contains("strict"));
    }
    let wrong = crate::support::admin(
        &app,
        axum::http::Method::POST,
        "/healthcheck/groups/search-only/summary",
        None,
        "",
    )
    .await;
    assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong.header("content-type"), "application/json");
}

#[tokio::test(start_paused = true)]
async fn readiness_can_be_bound_to_a_group() {
    let f = grouped().await;
    f.set(&f.search, CheckStatus::Major).await;
    let bound = status_http::Routes::new(&f.registry)
        .readiness_group("search-only")
        .build();
    let ready = get(&bound, "/healthcheck/ready").await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        ready.json()["reasons"][0],
        "group search-only is MAJOR: search is MAJOR"
    );
    assert_eq!(
        get(&f.app(), "/healthcheck/ready").await.status,
        StatusCode::OK,
        "the system's readiness is unchanged"
    );
    // A group that does not exist (a typo): an error when the routes are built, never a
    // readiness that fails for ever.
    let missing = status_http::Routes::new(&f.registry)
        .readiness_group("redy")
        .try_build()
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    assert_eq!(missing.to_string(), "no probe group named \"redy\"");
    let registry = f.registry.clone();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        status_http::Routes::new(&registry)
            .readiness_group("redy")
            .build()
    }));
    assert!(panicked.is_err(), "build panics with the same sentence");
    // Probes used directly (gRPC's) fail safe on a missing group, and say so.
    let probes = status_core::Probes::new(&f.registry).readiness_group("redy");
    assert!(probes.check().is_err());
    let ready = probes.ready(false);
    assert!(!ready.ready());
    assert!(ready.reasons()[0].contains("redy, which does not exist"));
}

#[tokio::test(start_paused = true)]
async fn groups_show_in_metrics_and_on_the_dashboard() {
    let f = grouped().await;
    f.set(&f.search, CheckStatus::Major).await;
    let app = f.app();
    let metrics = get(&app, "/metrics").await.body;
    assert!(
        metrics.contains("status_group_condition{group=\"search-only\"} 2"),
        "{metrics}"
    );
    assert!(metrics.contains("status_group_condition{group=\"writes-path\"} 2"));
    let page = get(&app, "/status?group=search-only").await.body;
    assert!(page.contains("id=\"filter-group\""), "a group filter");
    assert!(page.contains("id=\"dep-search\""));
    assert!(!page.contains("id=\"dep-db\""), "db is not in search-only");
    assert!(page.contains("data-groups=\"search-only writes-path\""));
}

#[tokio::test(start_paused = true)]
async fn the_public_view_of_a_group_withholds_what_it_withholds_elsewhere() {
    let f = grouped().await;
    f.set(&f.search, CheckStatus::Major).await;
    let public = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .public_view(true)
        .build();
    let body = get(&public, "/healthcheck/groups/search-only").await.json();
    let search = &body["results"]["MAJOR"][0];
    assert_eq!(search["errorMessage"], "MAJOR", "{search}");
    assert!(!body.to_string().contains("says MAJOR"));
}

/// A failing answer is never a 304, whatever `If-None-Match` says: load balancers that count
/// 3xx as up (HAProxy's `httpchk` among them) would keep a failing instance in rotation
/// (RFC 9110 §13.2.1: preconditions apply to a 2xx answer only).
#[tokio::test(start_paused = true)]
async fn failing_probes_never_answer_304() {
    let f = grouped().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = f.app();
    for route in [
        "/healthcheck",
        "/healthcheck/summary",
        "/healthcheck/groups/writes-path",
        "/healthcheck/groups/writes-path/summary",
    ] {
        let failing = get(&app, route).await;
        assert_eq!(failing.status, StatusCode::SERVICE_UNAVAILABLE, "{route}");
        let own_tag = failing.header("etag").to_owned();
        for tag in [own_tag.as_str(), "*"] {
            let again = crate::support::call(
                &app,
                axum::http::Request::get(route)
                    .header("if-none-match", tag)
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await;
            assert_eq!(
                again.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{route} with If-None-Match {tag}"
            );
            assert_eq!(again.body, failing.body, "{route}: the whole failing body");
        }
    }
}
