//! `/mcp` mounted by the routes: the routes' admin token opens it, a read-only token set on
//! `Mcp` too, the routes' probes and history answer, and its door is counted in `/metrics`.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value};
use status_core::CheckStatus;

use crate::support::{call, fixture, get, Answer, TOKEN};

fn mcp(token: Option<&str>, body: &Value) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("host", "status.example")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.body(Body::from(body.to_string())).unwrap()
}

fn summary() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "summary", "arguments": {}}})
}

/// The summary tool's JSON.
fn summary_of(answer: &Answer) -> Value {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let text = answer.json()["result"]["content"][1]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_routes_mount_it_with_their_token_and_probes() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .readiness_group("core")
        .mcp(status_http::Mcp::new(&f.registry).read_token("agents"))
        .try_build();
    // A readiness group the registry lacks: the build says so, MCP or not.
    assert!(app.is_err());
    f.registry
        .add_group(
            status_core::Group::builder("core")
                .dependency("db")
                .build()
                .unwrap(),
        )
        .unwrap();
    f.registry.refresh_all().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .readiness_group("core")
        .mcp(status_http::Mcp::new(&f.registry).read_token("agents"))
        .build();
    let admin = summary_of(&call(&app, mcp(Some(TOKEN), &summary())).await);
    assert_eq!(admin["rootCauses"][0]["id"], "db");
    assert_eq!(admin["rootCauses"][0]["message"], "says OUTAGE");
    assert_eq!(admin["readiness"]["ready"], json!(false));
    assert_eq!(
        admin["rootCauses"][0]["takesDown"]["features"],
        json!(["writes"])
    );
    let reader = summary_of(&call(&app, mcp(Some("agents"), &summary())).await);
    assert_eq!(reader["rootCauses"][0]["id"], "db");
    assert_ne!(reader["rootCauses"][0]["message"], "says OUTAGE");
    let refused = call(&app, mcp(Some("nope"), &summary())).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(refused.json()["error"].as_str().unwrap().contains("bearer"));
    let metrics = get(&app, "/metrics").await.body;
    assert!(
        metrics.contains(r#"status_mcp_requests_total{outcome="answered"} 2"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"status_mcp_requests_total{outcome="unauthorized"} 1"#),
        "{metrics}"
    );
}

#[tokio::test(start_paused = true)]
async fn without_an_admin_token_it_is_closed() {
    let f = fixture().await;
    let app = status_http::Routes::new(&f.registry).build();
    let closed = call(&app, mcp(Some(TOKEN), &summary())).await;
    assert_eq!(closed.status, StatusCode::FORBIDDEN, "{}", closed.body);
}

/// `/mcp` takes the bodies MCP documents (64 KiB by default), where every other route takes
/// 16 KiB; past MCP's own limit it is a 413 too.
#[tokio::test(start_paused = true)]
async fn mcp_takes_its_own_body_limit_not_the_admin_apis() {
    let f = fixture().await;
    let app = status_http::Routes::new(&f.registry)
        .admin_token(TOKEN)
        .build();
    let padded = |bytes: usize| {
        let mut body = summary().to_string();
        body.pop();
        body.push_str(&" ".repeat(bytes - body.len() - 1));
        body.push('}');
        let mut request = Request::post("/mcp")
            .header("host", "status.example")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {TOKEN}"));
        request = request.header("content-length", bytes.to_string());
        request.body(Body::from(body)).unwrap()
    };
    let answer = call(&app, padded(20 * 1024)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    summary_of(&answer);
    let answer = call(&app, padded(70 * 1024)).await;
    assert_eq!(
        answer.status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        answer.body
    );
    // Elsewhere the admin API's limit holds.
    let big = Request::put("/admin/drain")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .header("content-length", (20 * 1024).to_string())
        .body(Body::from(" ".repeat(20 * 1024)))
        .unwrap();
    assert_eq!(call(&app, big).await.status, StatusCode::PAYLOAD_TOO_LARGE);
}
