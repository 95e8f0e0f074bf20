//! Admin calls: authentication, validation, and nothing changed on rejection.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use status_core::CheckStatus;

use crate::support::{admin, fixture, get, TOKEN};

#[tokio::test(start_paused = true)]
async fn without_a_configured_token_admin_calls_are_forbidden() {
    let f = fixture().await;
    let app = status_http::routes(&f.registry);
    for (method, uri) in [
        (Method::POST, "/healthcheck/dependencies/db/refresh"),
        (Method::PUT, "/features/writes/override"),
        (Method::DELETE, "/features/writes/override"),
        (Method::PUT, "/admin/drain"),
        (Method::DELETE, "/admin/drain"),
    ] {
        let answer = admin(&app, method.clone(), uri, Some(TOKEN), "{}").await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{method} {uri}");
        assert!(answer.json()["error"]
            .as_str()
            .unwrap()
            .contains("disabled"));
    }
}

#[tokio::test(start_paused = true)]
async fn missing_or_wrong_tokens_are_unauthorized() {
    let f = fixture().await;
    let app = f.app();
    for token in [None, Some("wrong"), Some("test-token-but-longer"), Some("")] {
        let answer = admin(&app, Method::PUT, "/admin/drain", token, "{}").await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{token:?}");
        assert_eq!(answer.header("www-authenticate"), "Bearer realm=\"status\"");
        assert_eq!(answer.json()["error"], "missing or invalid bearer token");
    }
    // Auth comes before anything else: an unknown feature is not revealed.
    let hidden = admin(&app, Method::PUT, "/features/nope/override", None, "{}").await;
    assert_eq!(hidden.status, StatusCode::UNAUTHORIZED);
    assert!(f.registry.drain_state().is_none());
}

#[tokio::test(start_paused = true)]
async fn every_admin_call_bounds_its_body() {
    let f = fixture().await;
    let app = f.app();
    let big = "x".repeat(16 * 1024 + 1);
    for (method, uri) in [
        (Method::POST, "/healthcheck/dependencies/db/refresh"),
        (Method::PUT, "/features/writes/override"),
        (Method::DELETE, "/features/writes/override"),
        (Method::PUT, "/admin/drain"),
        (Method::DELETE, "/admin/drain"),
    ] {
        let answer = admin(&app, method.clone(), uri, Some(TOKEN), big.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{method} {uri}"
        );
        assert_eq!(
            answer.json()["error"],
            "request body larger than 16384 bytes"
        );
    }
    assert!(f.registry.drain_state().is_none());
}

#[tokio::test(start_paused = true)]
async fn refresh_answers_with_the_fresh_result() {
    let f = fixture().await;
    let app = f.app();
    f.db.set(CheckStatus::Major);
    let answer = admin(
        &app,
        Method::POST,
        "/healthcheck/dependencies/db/refresh",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["status"], "MAJOR");
    let unknown = admin(
        &app,
        Method::POST,
        "/healthcheck/dependencies/nope/refresh",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn features_list_and_read() {
    let f = fixture().await;
    let app = f.app();
    let list = get(&app, "/features").await;
    assert_eq!(list.status, StatusCode::OK);
    let names: Vec<_> = list.json()["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["search-box", "writes"]);

    f.set(&f.db, CheckStatus::Outage).await;
    let writes = get(&app, "/features/writes").await;
    assert_eq!(writes.status, StatusCode::OK);
    insta::assert_snapshot!("feature_writes_off", writes.body);

    let missing = get(&app, "/features/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["error"], "no feature named \"nope\"");
}

#[tokio::test(start_paused = true)]
async fn overrides_are_validated_and_rejections_change_nothing() {
    let f = fixture().await;
    let app = f.app();
    let before = get(&app, "/features/writes").await.body;
    let oversized = format!(
        r#"{{"enabled":false,"ttlSeconds":60,"reason":"{}"}}"#,
        "x".repeat(17 * 1024)
    );
    let cases: Vec<(&str, String, StatusCode)> = vec![
        ("writes", "{not json".into(), StatusCode::BAD_REQUEST),
        ("writes", String::new(), StatusCode::BAD_REQUEST),
        (
            "writes",
            r#"{"enabled":false,"ttlSeconds":60}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "writes",
            r#"{"enabled":false,"ttlSeconds":60,"reason":"  "}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "writes",
            r#"{"enabled":false,"ttlSeconds":0,"reason":"r"}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "writes",
            r#"{"enabled":false,"ttlSeconds":604801,"reason":"r"}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "writes",
            r#"{"enabled":false,"ttlSeconds":-5,"reason":"r"}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "writes",
            r#"{"enabled":"no","ttlSeconds":60,"reason":"r"}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        (
            "writes",
            r#"{"enabled":false,"ttl":60,"reason":"r"}"#.into(),
            StatusCode::BAD_REQUEST,
        ),
        ("writes", oversized, StatusCode::PAYLOAD_TOO_LARGE),
        (
            "nope",
            r#"{"enabled":false,"ttlSeconds":60,"reason":"r"}"#.into(),
            StatusCode::NOT_FOUND,
        ),
    ];
    for (name, body, expected) in cases {
        let uri = format!("/features/{name}/override");
        let answer = admin(&app, Method::PUT, &uri, Some(TOKEN), body.clone()).await;
        assert_eq!(answer.status, expected, "{body:.80}");
        assert!(answer.json()["error"].is_string(), "{}", answer.body);
        assert_eq!(
            get(&app, "/features/writes").await.body,
            before,
            "{body:.80}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_override_forces_a_feature_until_its_ttl_ends() {
    let f = fixture().await;
    let app = f.app();
    let writes = f.registry.feature("writes").unwrap();
    let answer = admin(
        &app,
        Method::PUT,
        "/features/writes/override",
        Some(TOKEN),
        r#"{"enabled":false,"ttlSeconds":30,"reason":"migrating","actor":"alice"}"#,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    let json = answer.json();
    assert_eq!(json["enabled"], false);
    assert_eq!(json["override"]["reason"], "migrating");
    assert_eq!(json["override"]["actor"], "admin", "the token's operator");
    assert!(!writes.is_enabled());

    tokio::time::sleep(Duration::from_secs(31)).await;
    assert!(writes.is_enabled(), "the override ended with its TTL");

    admin(
        &app,
        Method::PUT,
        "/features/writes/override",
        Some(TOKEN),
        r#"{"enabled":false,"ttlSeconds":30,"reason":"again"}"#,
    )
    .await;
    let cleared = admin(
        &app,
        Method::DELETE,
        "/features/writes/override",
        Some(TOKEN),
        "",
    )
    .await;
    assert_eq!(cleared.status, StatusCode::OK);
    assert_eq!(cleared.json()["enabled"], true);
    assert!(cleared.json()["override"].is_null());
    let flips = get(&app, "/features/writes").await.json()["flips"].clone();
    let causes: Vec<_> = flips
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["cause"].as_str().unwrap().to_owned())
        .collect();
    // On with the first check, then: forced off, expired, forced off, cleared.
    assert_eq!(
        causes,
        [
            "automatic",
            "override",
            "overrideExpired",
            "override",
            "overrideCleared"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn drain_fails_readiness_and_summary_but_not_liveness() {
    let f = fixture().await;
    let app = f.app();
    for body in [
        "{",
        r#"{"ttlSeconds":60}"#,
        r#"{"ttlSeconds":60,"reason":""}"#,
        r#"{"ttlSeconds":0,"reason":"r"}"#,
        r#"{"ttlSeconds":604801,"reason":"r"}"#,
    ] {
        let answer = admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}");
        assert!(f.registry.drain_state().is_none(), "{body}");
    }
    let answer = admin(
        &app,
        Method::PUT,
        "/admin/drain",
        Some(TOKEN),
        r#"{"ttlSeconds":60,"reason":"rolling restart"}"#,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.json()["draining"], true);
    assert_eq!(answer.json()["reason"], "rolling restart");

    assert_eq!(
        get(&app, "/healthcheck/ready").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    let summary = get(&app, "/healthcheck/summary").await;
    assert_eq!(summary.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(summary
        .body
        .starts_with("{\"condition\":\"OUTAGE\",\"dcStatus\":\"FAILOVER\""));
    assert_eq!(summary.json()["draining"]["reason"], "rolling restart");
    assert_eq!(get(&app, "/healthcheck/live").await.status, StatusCode::OK);
    assert_eq!(
        get(&app, "/healthcheck").await.json()["draining"]["reason"],
        "rolling restart"
    );

    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(get(&app, "/healthcheck/ready").await.status, StatusCode::OK);

    admin(
        &app,
        Method::PUT,
        "/admin/drain",
        Some(TOKEN),
        r#"{"ttlSeconds":60,"reason":"r"}"#,
    )
    .await;
    let undrain = admin(&app, Method::DELETE, "/admin/drain", Some(TOKEN), "").await;
    assert_eq!(undrain.status, StatusCode::OK);
    assert_eq!(undrain.json()["draining"], false);
    assert_eq!(
        get(&app, "/healthcheck/summary").await.status,
        StatusCode::OK
    );
}
