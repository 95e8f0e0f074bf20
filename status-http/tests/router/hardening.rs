//! Hostile and odd input: every error answer is JSON, bounds answer 4xx before any work, text
//! from operators is printable, the summary carries no detail in any format.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use status_core::CheckStatus;

use crate::support::{admin, call, fixture, get, TOKEN};

/// Asserts `answer` is a JSON `{"error": …}` with `status`; its message.
fn json_error(answer: &crate::support::Answer, status: StatusCode) -> String {
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.header("content-type"), "application/json");
    answer.json()["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error message in {}", answer.body))
        .to_owned()
}

#[tokio::test(start_paused = true)]
async fn every_error_of_the_router_is_json() {
    let f = fixture().await;
    let app = f.app();
    json_error(&get(&app, "/no/such/route").await, StatusCode::NOT_FOUND);

    let wrong_method = admin(&app, Method::POST, "/healthcheck", None, "").await;
    json_error(&wrong_method, StatusCode::METHOD_NOT_ALLOWED);
    assert!(wrong_method.header("allow").contains("GET"));

    // Liveness and the summary, served by their own service, answer the same way.
    for hot in ["/healthcheck/live", "/healthcheck/summary"] {
        let wrong_method = admin(&app, Method::POST, hot, None, "").await;
        json_error(&wrong_method, StatusCode::METHOD_NOT_ALLOWED);
        assert!(wrong_method.header("allow").contains("GET"), "{hot}");
        let bad = get(&app, &format!("{hot}?strict=maybe")).await;
        assert!(
            json_error(&bad, StatusCode::BAD_REQUEST).contains("strict"),
            "{hot}"
        );
        let long = format!("{hot}?pad={}", "a".repeat(9000));
        json_error(&get(&app, &long).await, StatusCode::URI_TOO_LONG);
        let head = admin(&app, Method::HEAD, hot, None, "").await;
        assert_eq!(head.status, StatusCode::OK, "{hot}");
        assert!(head.body.is_empty(), "HEAD {hot} has no body");
        assert_eq!(head.header("cache-control"), "no-store", "{hot}");
    }

    let bad_encoding = get(&app, "/healthcheck/dependencies/%FF%FE").await;
    json_error(&bad_encoding, StatusCode::BAD_REQUEST);

    let long = format!("/healthcheck?pad={}", "a".repeat(9000));
    json_error(&get(&app, &long).await, StatusCode::URI_TOO_LONG);

    let big_headers = call(
        &app,
        Request::get("/healthcheck/live")
            .header("x-padding", "b".repeat(40_000))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    json_error(&big_headers, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
}

#[tokio::test(start_paused = true)]
async fn a_huge_declared_body_is_refused_without_being_read() {
    let f = fixture().await;
    let app = f.app();
    // The body never ends: reading any of it would hang the test.
    let endless = Body::from_stream(futures::stream::pending::<Result<Vec<u8>, std::io::Error>>());
    let answer = call(
        &app,
        Request::put("/admin/drain")
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-length", "1073741824")
            .body(endless)
            .unwrap(),
    )
    .await;
    json_error(&answer, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(f.registry.drain_state().is_none());
}

#[tokio::test(start_paused = true)]
async fn admin_routes_check_the_token_before_the_path() {
    let f = fixture().await;
    let app = f.app();
    let answer = admin(&app, Method::PUT, "/features/%FF/override", None, "{}").await;
    json_error(&answer, StatusCode::UNAUTHORIZED);
    let answer = admin(
        &app,
        Method::POST,
        "/healthcheck/dependencies/%C3%28/refresh",
        Some("wrong"),
        "",
    )
    .await;
    json_error(&answer, StatusCode::UNAUTHORIZED);
}

#[tokio::test(start_paused = true)]
async fn exclude_is_bounded_in_count_and_length() {
    let f = fixture().await;
    let app = f.app();
    let names: Vec<String> = (0..257).map(|i| format!("d{i}")).collect();
    let answer = get(&app, &format!("/healthcheck?exclude={}", names.join(","))).await;
    assert!(json_error(&answer, StatusCode::BAD_REQUEST).contains("at most 256"));

    let answer = get(&app, &format!("/healthcheck?exclude={}", "x".repeat(300))).await;
    json_error(&answer, StatusCode::BAD_REQUEST);

    // 256 is fine, unknown names included.
    let answer = get(
        &app,
        &format!("/healthcheck/summary?exclude={}", names[..256].join(",")),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

#[tokio::test(start_paused = true)]
async fn the_health_json_summary_has_no_detail_and_agrees_with_the_code() {
    let f = fixture().await;
    let app = f.app();
    f.set(&f.db, CheckStatus::Outage).await;
    let answer = get(&app, "/healthcheck/summary?format=health+json").await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.header("content-type"), "application/health+json");
    let body = answer.json();
    assert_eq!(body["status"], "fail");
    assert!(body.get("checks").is_none(), "{body}");
    assert!(!answer.body.contains("says"), "a check's message: {body}");
    assert!(!answer.body.contains("db"), "a dependency's id: {body}");

    f.set(&f.db, CheckStatus::Ok).await;
    let answer = admin(
        &app,
        Method::PUT,
        "/admin/drain",
        Some(TOKEN),
        r#"{"ttlSeconds": 60, "reason": "deploy"}"#,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let answer = call(
        &app,
        Request::get("/healthcheck/summary")
            .header("accept", "application/health+json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.json()["status"], "fail", "{}", answer.body);
}

#[tokio::test(start_paused = true)]
async fn reasons_and_actors_must_be_printable_and_not_blank() {
    // (An actor a body claims is not read, the operator whose token made the call is; it is
    // still checked, so that a malformed body changes nothing.)
    let f = fixture().await;
    let app = f.app();
    for body in [
        r#"{"ttlSeconds": 60, "reason": "deploy\nreadyz check passed"}"#,
        r#"{"ttlSeconds": 60, "reason": "\u001b[32mgreen"}"#,
        r#"{"ttlSeconds": 60, "reason": "nul\u0000"}"#,
        r#"{"ttlSeconds": 60, "reason": "\u200b\u200d\ufeff"}"#,
        r#"{"ttlSeconds": 60, "reason": "deploy", "actor": "eve\r\n[+]db ok"}"#,
    ] {
        let answer = admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), body).await;
        json_error(&answer, StatusCode::BAD_REQUEST);
        let answer = admin(
            &app,
            Method::PUT,
            "/features/writes/override",
            Some(TOKEN),
            body.replace('{', r#"{"enabled": false, "#),
        )
        .await;
        json_error(&answer, StatusCode::BAD_REQUEST);
    }
    assert!(f.registry.drain_state().is_none(), "nothing drained");
    assert!(f.registry.holds().is_empty());
    let writes = get(&app, "/features/writes").await.json();
    assert!(writes["override"].is_null(), "nothing overridden: {writes}");
    let ready = get(&app, "/healthcheck/ready?verbose").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.body.lines().count(), 4, "{}", ready.body);
}
