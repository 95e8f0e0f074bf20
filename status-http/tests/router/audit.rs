//! The audit trail: every admin call, refused ones included, at `GET /admin/audit`.

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
    // Reads are not actions: not in the trail.
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
            ("PUT".into(), path.into(), 200, false, Some("bob".into())),
            ("PUT".into(), "/admin/drain".into(), 400, true, None),
            ("PUT".into(), "/admin/drain".into(), 401, true, None),
            (
                "PUT".into(),
                "/admin/drain".into(),
                200,
                false,
                Some("alice".into())
            ),
        ],
        "newest first"
    );
    assert!(entries[0]["at"].as_str().unwrap().ends_with('Z'));
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
    assert_eq!(
        trail.json()["entries"].as_array().unwrap().len(),
        status_http::AUDIT_KEPT
    );
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
            .push((e.path.clone(), e.status, e.refused));
    });
    let app = status_http::Routes::new(f.registry.clone())
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
