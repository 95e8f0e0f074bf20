//! The audit trail: every call that checks the token, refused ones apart, at
//! `GET /admin/audit`.

use axum::http::{Method, StatusCode};
use serde_json::Value;

use crate::support::{admin, fixture, get, TOKEN};

#[tokio::test(start_paused = true)]
async fn every_admin_call_is_in_the_trail_refusals_included() {
    let f = fixture().await;
    let app = f.app();
    let drain = r#"{"ttlSeconds": 60, "reason": "deploy", "actor": "alice"}"#;
    assert_eq!(
        admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), drain)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        admin(&app, Method::PUT, "/admin/drain", Some("wrong"), drain)
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), "{not json")
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let over = r#"{"enabled": false, "ttlSeconds": 60, "reason": "test", "actor": "bob"}"#;
    let path = "/features/writes/override";
    assert_eq!(
        admin(&app, Method::PUT, path, Some(TOKEN), over)
            .await
            .status,
        StatusCode::OK
    );
    // Reads open to all are not in the trail.
    assert_eq!(get(&app, "/features").await.status, StatusCode::OK);

    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "").await;
    assert_eq!(trail.status, StatusCode::OK);
    let entries: Vec<Value> = trail.json()["entries"].as_array().unwrap().clone();
    let seen: Vec<(String, String, u64, bool, Option<String>)> = entries
        .iter()
        .map(|e| {
            (
                e["method"].as_str().unwrap().to_owned(),
                e["path"].as_str().unwrap().to_owned(),
                e["status"].as_u64().unwrap(),
                e["refused"].as_bool().unwrap(),
                e["actor"].as_str().map(str::to_owned),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            // The operator whose token made each call, whatever the body claims.
            ("PUT".into(), path.into(), 200, false, Some("admin".into())),
            (
                "PUT".into(),
                "/admin/drain".into(),
                400,
                true,
                Some("admin".into())
            ),
            (
                "PUT".into(),
                "/admin/drain".into(),
                200,
                false,
                Some("admin".into())
            ),
        ],
        "newest first; the call without the right token is kept apart"
    );
    assert!(entries[0]["at"].as_str().unwrap().ends_with('Z'));
    let refusals = trail.json()["refusals"].as_array().unwrap().clone();
    assert_eq!(refusals.len(), 1);
    assert_eq!(
        (&refusals[0]["path"], &refusals[0]["status"]),
        (&Value::from("/admin/drain"), &Value::from(401))
    );
    assert_eq!(trail.json()["refusedTotal"], 1);
}

/// A flood of calls without the token can never push an operator's actions out of the
/// trail: refusals have their own bounded ring and a count.
#[tokio::test(start_paused = true)]
async fn refusals_never_evict_actions() {
    let f = fixture().await;
    let app = f.app();
    let drain = r#"{"ttlSeconds": 60, "reason": "deploy", "actor": "alice"}"#;
    admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), drain).await;
    for i in 0..(status_http::AUDIT_KEPT + 500) {
        let token = if i % 2 == 0 { Some("wrong") } else { None };
        let answer = admin(&app, Method::PUT, "/admin/drain", token, drain).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    }
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "")
        .await
        .json();
    let entries = trail["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["actor"], "admin");
    assert_eq!(
        trail["refusals"].as_array().unwrap().len(),
        status_http::REFUSALS_KEPT
    );
    assert_eq!(trail["refusedTotal"], status_http::AUDIT_KEPT + 500);
}

/// Each entry names the caller's address when the server gives it (`ConnectInfo`).
#[tokio::test(start_paused = true)]
async fn entries_name_the_callers_address() {
    let f = fixture().await;
    let app = f.app();
    let mut request = axum::http::Request::builder()
        .method(Method::DELETE)
        .uri("/admin/drain")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(axum::body::Body::empty())
        .unwrap();
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo(std::net::SocketAddr::from((
            [192, 0, 2, 7],
            40_000,
        ))));
    assert_eq!(
        crate::support::call(&app, request).await.status,
        StatusCode::OK
    );
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "")
        .await
        .json();
    assert_eq!(trail["entries"][0]["address"], "192.0.2.7");
}

/// A handler that panics behind the layer is answered 500 and recorded.
#[tokio::test(start_paused = true)]
async fn a_handler_that_panics_is_answered_and_recorded() {
    let log = status_http::AuditLog::new();
    let app = axum::Router::new().route(
        "/ops/explode",
        axum::routing::post(|| async {
            if true {
                panic!("boom");
            }
            "never"
        })
        .route_layer(log.layer()),
    );
    let answer = admin(&app, Method::POST, "/ops/explode", None, "").await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(answer.json()["error"].is_string());
    let entries = log.entries();
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].status(), entries[0].refused()),
        (Some(500), true)
    );
}

#[tokio::test(start_paused = true)]
async fn the_trail_is_for_admins_only_and_bounded() {
    let f = fixture().await;
    let app = f.app();
    let refused = get(&app, "/admin/audit").await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(refused.json()["error"].is_string());
    for _ in 0..(status_http::AUDIT_KEPT + 5) {
        admin(&app, Method::DELETE, "/admin/drain", Some(TOKEN), "").await;
    }
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "").await;
    let page = trail.json();
    assert_eq!(
        page["entries"].as_array().unwrap().len(),
        status_http::AUDIT_KEPT
    );
    // Paged by id, newest first: the next page is the rest (none: the oldest went).
    let next = page["nextBefore"].as_i64().unwrap();
    let rest = admin(
        &app,
        Method::GET,
        &format!("/admin/audit?before={next}&limit=10"),
        Some(TOKEN),
        "",
    )
    .await
    .json();
    assert!(rest["entries"].as_array().unwrap().is_empty(), "{rest}");
    let small = admin(&app, Method::GET, "/admin/audit?limit=2", Some(TOKEN), "")
        .await
        .json();
    let ids: Vec<i64> = small["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0] > ids[1], "{ids:?}");
    for query in ["limit=0", "before=-1", "limit=x", "since=1"] {
        let bad = admin(
            &app,
            Method::GET,
            &format!("/admin/audit?{query}"),
            Some(TOKEN),
            "",
        )
        .await;
        assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{query}: {}", bad.body);
        assert!(bad.json()["error"].is_string(), "{query}");
    }
}

#[tokio::test(start_paused = true)]
async fn observers_see_each_entry_as_it_is_recorded() {
    let f = fixture().await;
    let log = status_http::AuditLog::new();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    log.on_record(move |e| {
        sink.lock()
            .unwrap()
            .push((e.target.clone(), e.status().unwrap(), e.refused()));
    });
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .audit(log)
        .build();
    let body = r#"{"ttlSeconds": 60, "reason": "x"}"#;
    admin(&app, Method::PUT, "/admin/mutes/db", Some(TOKEN), body).await;
    admin(&app, Method::PUT, "/admin/mutes/db", Some("wrong"), body).await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("/admin/mutes/db".to_owned(), 200, false),
            ("/admin/mutes/db".to_owned(), 401, true)
        ]
    );
}

/// Operators named each by their own token: the trail's actor is the token's name whatever
/// the body claims, a read-only operator reads and is refused an act (403, nothing done), a
/// revoked token answers 401 at once.
#[tokio::test(start_paused = true)]
async fn each_operator_is_named_by_their_token_never_by_the_body() {
    let f = fixture().await;
    let auth = status_http::AdminAuth::parse("alice:alice-token,bob:bob-token:read-only").unwrap();
    let app = status_http::Routes::new(&f.registry)
        .admin_auth(auth.clone())
        .build();
    let claimed = r#"{"ttlSeconds": 60, "reason": "deploy", "actor": "mallory"}"#;
    let drained = admin(
        &app,
        Method::PUT,
        "/admin/drain",
        Some("alice-token"),
        claimed,
    )
    .await;
    assert_eq!(drained.status, StatusCode::OK, "{}", drained.body);
    assert_eq!(drained.json()["actor"], "alice");
    let refused = admin(&app, Method::DELETE, "/admin/drain", Some("bob-token"), "").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(refused.json()["error"]
        .as_str()
        .unwrap()
        .contains("bob may only read"));
    assert!(f.registry.drain_state().is_some(), "bob ended nothing");
    let trail = admin(&app, Method::GET, "/admin/audit", Some("bob-token"), "").await;
    assert_eq!(trail.status, StatusCode::OK, "bob reads");
    let trail = trail.json();
    let acts: Vec<(&str, &str)> = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["method"].is_string())
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["actor"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(acts, [("PUT /admin/drain", "alice")], "{trail}");
    assert!(!trail.to_string().contains("mallory"), "{trail}");
    let refusals = trail["refusals"].as_array().unwrap();
    assert_eq!(refusals[0]["actor"], "bob", "{trail}");
    assert_eq!(refusals[0]["status"], 403, "{trail}");

    assert!(auth.revoke("alice"));
    let revoked = admin(
        &app,
        Method::DELETE,
        "/admin/drain",
        Some("alice-token"),
        "",
    )
    .await;
    assert_eq!(revoked.status, StatusCode::UNAUTHORIZED);
    assert!(f.registry.drain_state().is_some());
}
