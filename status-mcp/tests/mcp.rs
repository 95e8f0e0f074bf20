//! The MCP endpoint as a client sees it, over the real streamable HTTP transport (rmcp's),
//! in process: the door (tokens, bounds), the tools' answers during an outage, and bad
//! input answered without changing anything. (A client nobody here wrote, the official
//! Python SDK, drives the quickstart's in `scripts/mcp`.)

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use status_core::{check, CheckStatus, Dependency, Feature, Group, MuteWindow, Registry};
use status_mcp::Mcp;
use tower::ServiceExt;

const ADMIN: &str = "admin-token";
const READ: &str = "read-token";

/// `db` down ("connection refused"); `search` depends on it; `cache` fine; the feature
/// `search-box` needs `search`; the group `core` holds `db` and `search`.
async fn outage() -> Registry {
    let registry = Registry::builder().appname("shop").build();
    let down =
        || check::ping(|| async { Err::<(), _>(std::io::Error::other("connection refused")) });
    let up = || check::ping(|| async { Ok::<(), std::io::Error>(()) });
    registry
        .add(Dependency::builder("db", down()).build().unwrap())
        .unwrap();
    registry
        .add(
            Dependency::builder("search", down())
                .depends_on("db")
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add(Dependency::builder("cache", up()).build().unwrap())
        .unwrap();
    registry
        .add_feature(
            Feature::builder("search-box")
                .requires("search", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .add_group(
            Group::builder("core")
                .dependency("db")
                .dependency("search")
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    registry
}

fn server(registry: &Registry) -> axum::Router {
    Mcp::new(registry)
        .admin_token(ADMIN)
        .read_token(READ)
        .router()
}

/// A JSON-RPC POST to `/mcp` with `token`.
fn post(token: Option<&str>, body: impl Into<Body>) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("host", "status.example:8080");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.body(body.into()).unwrap()
}

async fn send(app: &axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let answer = app.clone().oneshot(request).await.unwrap();
    let status = answer.status();
    let body = answer.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The result of JSON-RPC `method` with `params`, called with `token`.
async fn rpc(app: &axum::Router, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, text) = send(app, post(Some(token), body.to_string())).await;
    assert_eq!(status, StatusCode::OK, "{method}: {text}");
    let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

/// A tool's line and its JSON.
async fn call(
    app: &axum::Router,
    token: &str,
    tool: &str,
    arguments: Value,
) -> (String, Value, bool) {
    let result = rpc(
        app,
        token,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await;
    let content = result["content"].as_array().expect("content");
    let line = content[0]["text"].as_str().unwrap().to_owned();
    let body = content
        .get(1)
        .and_then(|c| c["text"].as_str())
        .map_or(Value::Null, |t| serde_json::from_str(t).unwrap());
    (line, body, result["isError"] == json!(true))
}

#[tokio::test]
async fn without_a_token_nothing_is_answered() {
    let registry = outage().await;
    let app = server(&registry);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    for token in [None, Some("wrong"), Some("")] {
        let answer = app
            .clone()
            .oneshot(post(token, list.clone()))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::UNAUTHORIZED, "{token:?}");
        assert!(answer.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer"));
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert!(body["error"].as_str().unwrap().contains("bearer token"));
        assert!(
            !body.to_string().contains("db"),
            "nothing of the registry leaks: {body}"
        );
    }
    // No token configured at all: closed.
    let closed = Mcp::new(&registry).router();
    let (status, body) = send(&closed, post(Some(ADMIN), list.clone())).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
}

#[tokio::test]
async fn every_tool_reads_and_none_writes() {
    let registry = outage().await;
    let app = server(&registry);
    let tools = rpc(&app, READ, "tools/list", json!({})).await;
    let tools = tools["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "fleet",
            "incidents",
            "maintenances",
            "slos",
            "summary",
            "uptime",
            "why"
        ]
    );
    for tool in tools {
        // Each answers structured content its schema describes: an object.
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        let hints = &tool["annotations"];
        assert_eq!(hints["readOnlyHint"], json!(true), "{tool}");
        assert_ne!(hints["destructiveHint"], json!(true), "{tool}");
    }
}

#[tokio::test]
async fn summary_names_the_root_cause_and_what_it_takes_down() {
    let registry = outage().await;
    let app = server(&registry);
    let (line, body, error) = call(&app, ADMIN, "summary", json!({})).await;
    assert!(!error);
    assert!(
        line.starts_with("OUTAGE: 2 failing, root cause db OUTAGE"),
        "{line}"
    );
    assert!(line.contains("features off: search-box"), "{line}");
    assert!(line.contains("groups failing: core"), "{line}");
    assert_eq!(body["condition"], "OUTAGE");
    assert_eq!(body["serving"], json!(false));
    let roots = body["rootCauses"].as_array().unwrap();
    assert_eq!(roots.len(), 1, "{body}");
    assert_eq!(roots[0]["id"], "db");
    assert_eq!(roots[0]["takesDown"]["dependencies"], json!(["search"]));
    assert_eq!(roots[0]["takesDown"]["features"], json!(["search-box"]));
    assert_eq!(roots[0]["takesDown"]["groups"], json!(["core"]));
    assert!(roots[0]["message"]
        .as_str()
        .unwrap()
        .contains("connection refused"));
    let search = body["failing"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "search")
        .unwrap();
    assert_eq!(search["rootCauses"], json!(["db"]));
    // The read-only token reads messages as the public view shows them.
    let (_, public, _) = call(&app, READ, "summary", json!({})).await;
    let message = public["rootCauses"][0]["message"].as_str().unwrap();
    assert!(!message.contains("connection refused"), "{message}");
}

#[tokio::test]
async fn why_walks_up_to_the_root_and_down_to_the_dependents() {
    let registry = outage().await;
    let app = server(&registry);
    let (line, search, _) = call(&app, ADMIN, "why", json!({"id": "search"})).await;
    assert!(line.starts_with("search is OUTAGE since"), "{line}");
    assert!(line.contains("blocked by db"), "{line}");
    assert_eq!(search["rootCauses"], json!(["db"]));
    assert_eq!(search["causes"][0]["id"], "db");
    let (line, db, _) = call(&app, ADMIN, "why", json!({"id": "db"})).await;
    assert!(
        line.contains("a root cause taking down 1 dependencies, 1 features, 1 groups"),
        "{line}"
    );
    assert_eq!(db["dependents"][0]["id"], "search");
    assert!(!db["transitions"].as_array().unwrap().is_empty(), "{db}");
    // A mute shows as maintenance.
    registry
        .mute(
            "db",
            MuteWindow::For(Duration::from_secs(600)),
            "upgrade",
            None,
        )
        .unwrap();
    registry.refresh_all().await;
    let (line, db, _) = call(&app, ADMIN, "why", json!({"id": "db"})).await;
    assert!(line.ends_with("(maintenance)"), "{line}");
    assert_eq!(db["muted"]["reason"], "upgrade");
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let registry = outage().await;
    let app = server(&registry);
    let before = registry.facts().generation();
    // An unknown dependency: a tool error naming those there are.
    let (line, _, error) = call(&app, ADMIN, "why", json!({"id": "nope"})).await;
    assert!(error);
    assert!(
        line.contains("no dependency `nope`; known: cache, db, search"),
        "{line}"
    );
    // Arguments of the wrong shape: a tool error the model reads (as MCP has input
    // validation errors), saying what was expected.
    let (line, _, error) = call(&app, ADMIN, "why", json!({"id": 42})).await;
    assert!(error);
    assert!(line.contains("expected a string"), "{line}");
    // A tool that does not exist.
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "mute", "arguments": {"id": "db"}}});
    let (_, text) = send(&app, post(Some(ADMIN), body.to_string())).await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert!(answer["error"]["code"].as_i64().is_some(), "{answer}");
    assert!(
        registry.result("db").unwrap().mute().is_none(),
        "nothing was muted"
    );
    // Malformed JSON: a JSON-RPC parse error, nothing else; JSON that is no JSON-RPC
    // message: an invalid request.
    let (status, text) = send(&app, post(Some(ADMIN), "{not json")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32700), "{answer}");
    assert_eq!(answer["id"], Value::Null);
    let (status, text) = send(&app, post(Some(ADMIN), r#"{"method": "tools/list"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    // An oversized body: 413 before any parse.
    let small = Mcp::new(&registry)
        .admin_token(ADMIN)
        .max_body_bytes(2048)
        .router();
    let huge = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "why", "arguments": {"id": "x".repeat(10_000)}}});
    let (status, _) = send(&small, post(Some(ADMIN), huge.to_string())).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        registry.facts().generation(),
        before,
        "no call changed the registry"
    );
}

#[tokio::test]
async fn requests_in_flight_are_bounded() {
    let registry = outage().await;
    let mcp = Mcp::new(&registry).admin_token(ADMIN).max_in_flight(1);
    let stats = mcp.stats();
    let app = mcp.router();
    // A body that never ends holds the one permit.
    let (_hold, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let slow = Body::from_stream(tokio_stream_of(rx));
    let first = tokio::spawn({
        let app = app.clone();
        async move { app.oneshot(post(Some(ADMIN), slow)).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let answer = app.clone().oneshot(post(Some(ADMIN), list)).await.unwrap();
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(answer.headers()["retry-after"], "1");
    assert_eq!(stats.busy(), 1);
    first.abort();
}

/// Places are per token: the read-only token's slow callers never take the admin's; and a
/// body that does not arrive within its deadline is a 408, its place given back.
#[tokio::test(start_paused = true)]
async fn the_read_only_token_cannot_take_the_admins_places() {
    let registry = outage().await;
    let app = Mcp::new(&registry)
        .admin_token(ADMIN)
        .read_token(READ)
        .max_in_flight(1)
        .router();
    let (_hold, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(1);
    let slow = tokio::spawn({
        let app = app.clone();
        let body = Body::from_stream(tokio_stream_of(rx));
        async move { app.oneshot(post(Some(READ), body)).await.unwrap() }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    let (status, _) = send(&app, post(Some(READ), list.clone())).await;
    assert_eq!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "the read token's one place"
    );
    let (status, body) = send(&app, post(Some(ADMIN), list.clone())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Past the body's deadline the slow one is answered 408 and its place is free.
    assert_eq!(slow.await.unwrap().status(), StatusCode::REQUEST_TIMEOUT);
    let (status, body) = send(&app, post(Some(READ), list)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// A JSON-RPC id that is neither a string, a number nor null is JSON-RPC's invalid request,
/// not the transport's 415.
#[tokio::test]
async fn an_id_that_is_not_one_is_an_invalid_request() {
    let registry = outage().await;
    let app = Mcp::new(&registry).admin_token(ADMIN).router();
    for id in [json!({}), json!([1]), json!(true)] {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}).to_string();
        let (status, body) = send(&app, post(Some(ADMIN), message)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{id}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["code"], -32600, "{id}");
    }
}

/// A stream of a channel's items.
fn tokio_stream_of<T: Send + 'static>(
    rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
}

#[tokio::test]
async fn resources_are_the_summary_and_each_dependency() {
    let registry = outage().await;
    let app = server(&registry);
    let list = rpc(&app, READ, "resources/list", json!({})).await;
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"status://summary"), "{uris:?}");
    assert!(uris.contains(&"status://dependencies/db"), "{uris:?}");
    let read = rpc(
        &app,
        READ,
        "resources/read",
        json!({"uri": "status://dependencies/search"}),
    )
    .await;
    let text = read["contents"][0]["text"].as_str().unwrap();
    let why: Value = serde_json::from_str(text).unwrap();
    assert_eq!(why["rootCauses"], json!(["db"]));
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "status://nope"}});
    let (_, text) = send(&app, post(Some(READ), body.to_string())).await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("status://summary"),
        "{answer}"
    );
}

#[tokio::test(start_paused = true)]
async fn uptime_and_incidents_read_the_history() {
    let registry = outage().await;
    let history = status_history::History::in_memory().open();
    history.attach(&registry);
    let _ = history.restored().await;
    registry.refresh_all().await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let app = Mcp::new(&registry)
        .admin_token(ADMIN)
        .history(history.clone())
        .router();
    let (line, body, error) = call(
        &app,
        ADMIN,
        "uptime",
        json!({"dependency": "db", "window": "1h"}),
    )
    .await;
    assert!(!error, "{line}");
    assert!(line.starts_with("dependency db: uptime"), "{line}");
    assert_eq!(body["kind"], "dependency");
    assert_eq!(body["name"], "db");
    let (line, body, _) = call(&app, ADMIN, "uptime", json!({})).await;
    assert!(line.starts_with("system: uptime"), "{line}");
    assert_eq!(body["kind"], "system");
    let (line, _, error) = call(
        &app,
        ADMIN,
        "uptime",
        json!({"group": "core", "window": "2w"}),
    )
    .await;
    assert!(error && line.contains("`window` is a number"), "{line}");
    let (line, _, error) = call(&app, ADMIN, "uptime", json!({"group": "nope"})).await;
    assert!(
        error && line.contains("no group `nope`; known: core"),
        "{line}"
    );
    let (line, _, error) = call(&app, ADMIN, "uptime", json!({"window": "9999d"})).await;
    assert!(error && line.contains("up to 400d"), "{line}");
    // The incident the outage opened, with its roots.
    history.flush().await;
    let (line, body, error) = call(&app, ADMIN, "incidents", json!({"days": 1})).await;
    assert!(!error, "{line}");
    assert!(
        line.starts_with("1 open, 0 resolved in the last 1 days; #"),
        "{line}"
    );
    assert_eq!(body["incidents"][0]["roots"], json!(["db"]));
    let (line, _, error) = call(&app, ADMIN, "incidents", json!({"days": 0})).await;
    assert!(error && line.contains("`days` is 1 to 90"), "{line}");
    // Without a history, the tools say so.
    let bare = server(&registry);
    let (line, _, error) = call(&bare, ADMIN, "incidents", json!({})).await;
    assert!(error && line.contains("no history"), "{line}");
}

#[tokio::test]
async fn the_fleet_says_whether_a_failure_is_shared() {
    use status_fleet::{FailingDependency, FleetView, HealthRule, InstanceSummary};
    let registry = outage().await;
    let view = || {
        let db = || vec![FailingDependency::new("db", CheckStatus::Outage)];
        let i = |id: &str, dc: &str, failing: Vec<FailingDependency>| {
            let summary = InstanceSummary::new(id, dc, CheckStatus::Outage, Vec::new(), "1.0");
            (summary.with_failing(failing), Duration::ZERO)
        };
        Arc::new(FleetView::new(
            vec![
                i("e1", "east", db()),
                i("e2", "east", db()),
                i("w1", "west", Vec::new()),
            ],
            Duration::from_secs(3),
            HealthRule::default(),
        ))
    };
    let app = Mcp::new(&registry).admin_token(ADMIN).fleet(view).router();
    let (line, body, error) = call(&app, ADMIN, "fleet", json!({})).await;
    assert!(!error, "{line}");
    assert!(line.contains("shared failures: db in east"), "{line}");
    assert_eq!(body["failing"][0]["instances"], json!(2));
    let (line, why, _) = call(&app, ADMIN, "why", json!({"id": "db"})).await;
    assert!(line.ends_with("; fleet: shared"), "{line}");
    assert_eq!(why["fleet"]["datacenters"][0]["datacenter"], "east");
    // Without a fleet, the tool says so.
    let (line, _, error) = call(&server(&registry), ADMIN, "fleet", json!({})).await;
    assert!(error && line.contains("no fleet view"), "{line}");
}

#[tokio::test]
async fn answers_are_sized_for_a_context() {
    let registry = Registry::builder().appname("big").build();
    let down = || check::ping(|| async { Err::<(), _>(std::io::Error::other("down")) });
    for i in 0..25 {
        registry
            .add(
                Dependency::builder(format!("dep-{i:02}"), down())
                    .build()
                    .unwrap(),
            )
            .unwrap();
    }
    registry.refresh_all().await;
    let app = server(&registry);
    let (line, body, _) = call(&app, ADMIN, "summary", json!({})).await;
    assert_eq!(body["failing"].as_array().unwrap().len(), 20);
    assert_eq!(body["rootCauses"].as_array().unwrap().len(), 20);
    assert_eq!(body["omitted"]["failing"], json!(5), "{body}");
    assert_eq!(body["omitted"]["rootCauses"], json!(5), "{body}");
    assert!(line.contains("25 failing"), "{line}");
    assert!(line.contains(", and 5 more"), "{line}");
    // Compact: well under what a model's context minds.
    assert!(
        body.to_string().len() < 16_000,
        "{} bytes",
        body.to_string().len()
    );
}

#[tokio::test(start_paused = true)]
async fn slos_say_what_burns_and_refuse_an_unknown_name() {
    let registry = outage().await;
    let history = status_history::History::in_memory()
        .objectives(["db=dependency:db@99/30d".parse().unwrap()])
        .open();
    history.attach(&registry);
    let _ = history.restored().await;
    registry.refresh_all().await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let app = Mcp::new(&registry)
        .admin_token(ADMIN)
        .read_token(READ)
        .history(history.clone())
        .router();
    let (line, body, error) = call(&app, ADMIN, "slos", json!({})).await;
    assert!(!error, "{line}");
    assert!(
        line.starts_with("1 objectives; alerting: db page"),
        "{line}"
    );
    assert_eq!(body["slos"][0]["name"], "db");
    assert_eq!(body["slos"][0]["alerts"][0]["firing"], true, "{body}");
    let (line, body, error) = call(&app, READ, "slos", json!({"name": "db"})).await;
    assert!(!error, "{line}");
    assert_eq!(body["slos"][0]["target"], "dependency:db");
    let (line, _, error) = call(&app, ADMIN, "slos", json!({"name": "nope"})).await;
    assert!(
        error && line.contains("no objective `nope`; declared: db"),
        "{line}"
    );
}

#[tokio::test]
async fn the_read_only_token_reads_no_operator_s_words() {
    let registry = outage().await;
    registry
        .mute(
            "search",
            status_core::MuteWindow::For(Duration::from_secs(600)),
            "secret vendor migration",
            Some("alice"),
        )
        .unwrap();
    registry
        .override_feature(
            "search-box",
            &status_core::FeatureOverride::new(
                false,
                Duration::from_secs(600),
                "legal hold on search",
            )
            .unwrap()
            .actor("bob"),
        )
        .unwrap();
    registry
        .drain("moving to the new rack", None, Some("carol"))
        .unwrap();
    registry.refresh_all().await;
    let app = server(&registry);
    let said = [
        "secret vendor migration",
        "legal hold on search",
        "moving to the new rack",
        "alice",
        "bob",
        "carol",
    ];
    for tool in ["summary", "why"] {
        let args = if tool == "why" {
            json!({"id": "search"})
        } else {
            json!({})
        };
        let (line, body, error) = call(&app, READ, tool, args.clone()).await;
        assert!(!error, "{line}");
        let all = format!("{line} {body}");
        for words in said {
            assert!(
                !all.contains(words),
                "{tool} with the read-only token says {words:?}: {all}"
            );
        }
        let (line, body, _) = call(&app, ADMIN, tool, args).await;
        let all = format!("{line} {body}");
        assert!(
            all.contains("secret vendor migration"),
            "{tool} with the admin token: {all}"
        );
    }
    let (_, summary, _) = call(&app, READ, "summary", json!({})).await;
    assert_eq!(
        summary["muted"][0]["reason"], "muted by an operator",
        "{summary}"
    );
    assert!(
        summary["readiness"]["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "draining"),
        "{summary}"
    );
}
