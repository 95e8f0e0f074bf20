//! Query strings from outside, on every route that reads one: the probes' `?format=`,
//! `?exclude=`, `?strict=`, the dashboard's filter, uptime windows, the month report, the
//! audit trail's pages, the history pages. Whatever the query, the answer is never a 5xx, and
//! a refusal is a 400 with a JSON error saying why.

use crate::common;

use std::sync::OnceLock;

use axum::body::Body;
use http_body_util::BodyExt;
use tower::ServiceExt;

const TOKEN: &str = "fuzz-token";

const PATHS: [&str; 12] = [
    "/healthcheck",
    "/healthcheck/ready",
    "/healthcheck/live",
    "/healthcheck/groups/ready",
    "/healthcheck/uptime",
    "/healthcheck/dependencies/db/uptime",
    "/healthcheck/report",
    "/admin/history/audit",
    "/status",
    "/status/history",
    "/status/history/db",
    "/healthcheck/dependencies/db",
];

/// One router for every input: GET requests change nothing.
fn app() -> &'static axum::Router {
    static APP: OnceLock<axum::Router> = OnceLock::new();
    APP.get_or_init(|| {
        common::runtime().block_on(async {
            let registry = common::registry_with_db();
            let history = status_history::History::in_memory().open();
            status_http::Routes::new(&registry)
                .admin_token(TOKEN)
                .history(history)
                .build()
        })
    })
}

/// One input (see the module).
pub fn query_string(input: (u8, &[u8])) {
    let (route, query) = input;
    let path = PATHS[usize::from(route) % PATHS.len()];
    let Ok(query) = std::str::from_utf8(query) else {
        return;
    };
    // What a server would have refused before routing (not a URI) is not this test's.
    let Ok(uri) = format!("{path}?{query}").parse::<axum::http::Uri>() else {
        return;
    };
    let app = app().clone();
    common::runtime().block_on(async {
        let request = axum::http::Request::get(uri)
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .expect("a request");
        let answer = app.oneshot(request).await.expect("infallible");
        let status = answer.status();
        let bytes = answer
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !status.is_server_error() || status == 503,
            "{path}?{query}: {status} {text}"
        );
        if status.is_client_error() {
            let json: serde_json::Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| panic!("{path}?{query}: {status} is not JSON: {text}"));
            assert!(json["error"].is_string(), "{json}");
        }
    });
}
