//! Mutes and maintenance windows through the admin API.

use axum::http::{Method, StatusCode};
use serde_json::Value;

use crate::support::{admin, fixture, get, TOKEN};

#[tokio::test(start_paused = true)]
async fn a_mute_is_set_shown_listed_and_ended() {
    let f = fixture().await;
    let app = f.app();
    let body = r#"{"ttlSeconds": 600, "reason": "upgrade to 16", "actor": "alice"}"#;
    let set = admin(&app, Method::PUT, "/admin/mutes/db", Some(TOKEN), body).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.json());
    let mute = set.json();
    assert_eq!(mute["dependency"], "db");
    assert_eq!(mute["active"], true);
    assert_eq!(mute["actor"], "admin", "the token's operator");
    assert_eq!(mute["start"], "2026-01-01T00:00:00.000Z");
    assert_eq!(mute["until"], "2026-01-01T00:10:00.000Z");

    // Still checked and shown, with its mute, in the detailed report and the dependency's.
    let report = get(&app, "/healthcheck").await.json();
    let db = find(&report, "db");
    assert_eq!(db["mute"]["reason"], "upgrade to 16");
    let one = get(&app, "/healthcheck/dependencies/db").await.json();
    assert_eq!(one["mute"]["actor"], "admin");
    let public = status_http::Routes::new(&f.registry)
        .public_view(true)
        .build();
    let public = get(&public, "/healthcheck").await;
    assert!(!public.body.contains("upgrade to 16"), "{}", public.body);
    assert!(public.body.contains("\"db\""));

    let list = admin(&app, Method::GET, "/admin/mutes", Some(TOKEN), "").await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.json()["mutes"][0]["dependency"], "db");

    let ended = admin(&app, Method::DELETE, "/admin/mutes/db", Some(TOKEN), "").await;
    assert_eq!(ended.status, StatusCode::OK);
    assert_eq!(ended.json()["wasMuted"], true);
    assert!(find(&get(&app, "/healthcheck").await.json(), "db")
        .get("mute")
        .is_none());
    let again = admin(&app, Method::DELETE, "/admin/mutes/db", Some(TOKEN), "").await;
    assert_eq!(again.json()["wasMuted"], false);

    // In the audit trail, with the actor.
    let trail = admin(&app, Method::GET, "/admin/audit", Some(TOKEN), "").await;
    let entries: Vec<Value> = trail.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["path"] == "/admin/mutes/db")
        .cloned()
        .collect();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[2]["actor"], "admin");
}

/// A maintenance window scheduled later over a mute in force would end that mute at once:
/// refused with 409, the mute kept. One that starts now replaces it, as a new mute does.
#[tokio::test(start_paused = true)]
async fn a_scheduled_window_never_silently_replaces_a_mute_in_force() {
    let f = fixture().await;
    let app = f.app();
    let now = r#"{"ttlSeconds": 7200, "reason": "incident 42", "actor": "alice"}"#;
    let set = admin(&app, Method::PUT, "/admin/mutes/db", Some(TOKEN), now).await;
    assert_eq!(set.status, StatusCode::OK);
    let later = r#"{"start": "2026-01-01T05:00:00Z", "end": "2026-01-01T06:00:00Z", "reason": "maintenance"}"#;
    let refused = admin(&app, Method::PUT, "/admin/mutes/db", Some(TOKEN), later).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
    assert!(refused.json()["error"]
        .as_str()
        .unwrap()
        .contains("incident 42"));
    let mutes = f.registry.mutes();
    assert_eq!(mutes.len(), 1);
    assert_eq!(
        (mutes[0].reason.as_str(), mutes[0].active),
        ("incident 42", true)
    );
    // A mute that starts now replaces it.
    let again = r#"{"ttlSeconds": 60, "reason": "shorter"}"#;
    let replaced = admin(&app, Method::PUT, "/admin/mutes/db", Some(TOKEN), again).await;
    assert_eq!(replaced.status, StatusCode::OK);
    assert_eq!(f.registry.mutes()[0].reason, "shorter");
}

#[tokio::test(start_paused = true)]
async fn a_window_is_scheduled_then_in_force_then_gone() {
    let f = fixture().await;
    let app = f.app();
    let body = r#"{"start": "2026-01-01T01:00:00Z", "end": "2026-01-01T02:00:00+00:00", "reason": "maintenance"}"#;
    let set = admin(&app, Method::PUT, "/admin/mutes/search", Some(TOKEN), body).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.json());
    assert_eq!(set.json()["active"], false);
    assert!(find(&get(&app, "/healthcheck").await.json(), "search")
        .get("mute")
        .is_none());

    tokio::time::sleep(std::time::Duration::from_secs(3601)).await;
    let search = find(&get(&app, "/healthcheck").await.json(), "search").clone();
    assert_eq!(search["mute"]["reason"], "maintenance");
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    assert!(find(&get(&app, "/healthcheck").await.json(), "search")
        .get("mute")
        .is_none());
    let list = admin(&app, Method::GET, "/admin/mutes", Some(TOKEN), "").await;
    assert_eq!(list.json()["mutes"], serde_json::json!([]));
}

#[tokio::test(start_paused = true)]
async fn bad_mutes_are_refused_and_change_nothing() {
    let f = fixture().await;
    let app = f.app();
    let cases: [(&str, &str, StatusCode); 12] = [
        (
            "/admin/mutes/nope",
            r#"{"ttlSeconds": 60, "reason": "x"}"#,
            StatusCode::NOT_FOUND,
        ),
        ("/admin/mutes/nope", "{bad", StatusCode::NOT_FOUND),
        ("/admin/mutes/db", "{bad", StatusCode::BAD_REQUEST),
        (
            "/admin/mutes/db",
            r#"{"reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            r#"{"ttlSeconds": 60, "start": "2026-01-01T01:00:00Z", "end": "2026-01-01T02:00:00Z", "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            r#"{"start": "2026-01-01T02:00:00Z", "end": "2026-01-01T01:00:00Z", "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            r#"{"start": "2026-01-01T01:00:00Z", "end": "2026-03-01T01:00:00Z", "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            r#"{"start": "tomorrow", "end": "2026-01-01T01:00:00Z", "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            r#"{"ttlSeconds": 2592001, "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            "{\"ttlSeconds\": 60, \"reason\": \"a\\u0007b\"}",
            StatusCode::BAD_REQUEST,
        ),
        // Past what a clock can add (this panicked in the time arithmetic once).
        (
            "/admin/mutes/db",
            r#"{"ttlSeconds": 9000000000000, "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
        (
            "/admin/mutes/db",
            r#"{"ttlSeconds": 18446744073709551615, "reason": "x"}"#,
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (path, body, status) in cases {
        let answer = admin(&app, Method::PUT, path, Some(TOKEN), body).await;
        assert_eq!(answer.status, status, "{path} {body}: {}", answer.body);
        assert!(answer.json()["error"].is_string(), "{body}");
    }
    let no_token = admin(
        &app,
        Method::PUT,
        "/admin/mutes/db",
        None,
        r#"{"ttlSeconds": 60, "reason": "x"}"#,
    )
    .await;
    assert_eq!(no_token.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get(&app, "/admin/mutes").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        admin(&app, Method::DELETE, "/admin/mutes/nope", Some(TOKEN), "")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    assert!(f.registry.mutes().is_empty(), "nothing half-applied");
}

/// The result of `id` in a detailed report.
fn find<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["results"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|v| v.as_array().unwrap())
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {report}"))
}
