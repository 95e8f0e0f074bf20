//! The demo's own routes through `app` with `oneshot`: the same headers and JSON errors as
//! the contract's.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use quickstart::{app, Config, Demo};
use tower::ServiceExt;

const TOKEN: &str = "routes-test-token";

async fn call(
    app: &axum::Router,
    method: &str,
    uri: &str,
    token: Option<&str>,
) -> (StatusCode, String, String, String) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(r#"{"mode":"ok"}"#)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (cache, content_type) = (header("cache-control"), header("content-type"));
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        cache,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn demo() -> axum::Router {
    let demo = Demo::start(Config {
        period: Duration::from_secs(1),
        admin_token: TOKEN.to_owned(),
        ..Config::default()
    })
    .unwrap();
    app(&demo)
}

#[tokio::test(start_paused = true)]
async fn every_route_says_no_store() {
    let app = demo().await;
    for (method, uri) in [
        ("GET", "/"),
        ("GET", "/hello"),
        ("GET", "/gated/hello"),
        ("GET", "/feature-gated/hello"),
        ("POST", "/checkout"),
        ("GET", "/demo/chaos"),
        ("PUT", "/demo/chaos/cache"),
        ("GET", "/healthcheck"),
        ("GET", "/openapi.json"),
        ("GET", "/no/such/route"),
        ("DELETE", "/hello"),
    ] {
        let (status, cache, _, body) = call(&app, method, uri, Some(TOKEN)).await;
        assert_eq!(
            cache, "no-store",
            "{method} {uri} answered {status}: {body}"
        );
    }
    // The embedded assets never change within a build: they may be cached.
    let (_, cache, _, _) = call(&app, "GET", "/status/assets/dashboard.css", None).await;
    assert_eq!(cache, "public, max-age=300");
}

#[tokio::test(start_paused = true)]
async fn the_demo_routes_answer_errors_in_json() {
    let app = demo().await;
    for (method, uri, token, expected) in [
        ("GET", "/no/such/route", None, StatusCode::NOT_FOUND),
        ("DELETE", "/hello", None, StatusCode::METHOD_NOT_ALLOWED),
        // The token is checked before the path is parsed.
        ("PUT", "/demo/chaos/%FF", None, StatusCode::UNAUTHORIZED),
        (
            "PUT",
            "/demo/chaos/%FF",
            Some(TOKEN),
            StatusCode::BAD_REQUEST,
        ),
        (
            "PUT",
            "/demo/chaos/nope",
            Some(TOKEN),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (status, _, content_type, body) = call(&app, method, uri, token).await;
        assert_eq!(status, expected, "{method} {uri}: {body}");
        assert_eq!(content_type, "application/json", "{method} {uri}");
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(json["error"].is_string(), "{body}");
    }
}

async fn shedding_demo(shed: quickstart::Shed) -> axum::Router {
    let demo = Demo::start(Config {
        admin_token: TOKEN.to_owned(),
        demo_workers: 4,
        shed,
        ..Config::default()
    })
    .unwrap();
    app(&demo)
}

#[tokio::test(start_paused = true)]
async fn demo_work_takes_its_time_and_fails_when_asked() {
    let app = demo().await;
    let started = tokio::time::Instant::now();
    let (status, _, _, body) = call(&app, "GET", "/demo/work?ms=250", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(started.elapsed(), Duration::from_millis(250));
    let (status, _, content_type, _) = call(&app, "GET", "/demo/work?fail=true", None).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(content_type, "application/json");
    let (status, _, _, _) = call(&app, "GET", "/demo/work-unprotected?ms=x", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(start_paused = true)]
async fn demo_work_sheds_past_its_limit_and_says_so_in_metrics() {
    let app = shedding_demo(quickstart::Shed {
        limit: quickstart::LimitChoice::Fixed(1),
        queue: 0,
        queue_timeout: Duration::from_secs(1),
        deadline: Duration::from_millis(300),
        lifo_after: None,
    })
    .await;
    let busy = tokio::spawn(
        app.clone().oneshot(
            Request::get("/demo/work?ms=1000")
                .body(Body::empty())
                .unwrap(),
        ),
    );
    tokio::task::yield_now().await;
    let response = app
        .clone()
        .oneshot(
            Request::get("/demo/work?ms=10")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(response.headers()["content-type"], "application/json");
    // The slow one ran into the deadline.
    let busy = busy.await.unwrap().unwrap();
    assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body = busy.into_body().collect().await.unwrap().to_bytes();
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("deadline"), "{body}");
    // The unprotected route has no such bounds.
    let (status, _, _, _) = call(&app, "GET", "/demo/work-unprotected?ms=1000", None).await;
    assert_eq!(status, StatusCode::OK);

    // The layer reports itself as the passive dependency `shedding`.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, _, _, body) = call(&app, "GET", "/healthcheck/dependencies/shedding", None).await;
    assert_eq!(status, StatusCode::OK, "urgency None: {body}");
    let shedding: serde_json::Value = serde_json::from_str(&body).unwrap();
    // MINOR for the second it shed, OK again once it stopped.
    let transitions = shedding["history"]["transitions"].as_array().unwrap();
    assert!(
        transitions
            .iter()
            .any(|t| t["to"] == "MINOR" && t["message"].as_str().unwrap().contains("1 queue full")),
        "{body}"
    );
    assert!(shedding["passive"].as_bool().unwrap(), "{body}");

    let (_, _, _, metrics) = call(&app, "GET", "/metrics", None).await;
    for line in [
        r#"status_shed_limit{layer="demo-work"} 1"#,
        r#"status_shed_inflight{layer="demo-work"} 0"#,
        r#"status_shed_rejected_total{layer="demo-work",reason="queue_full"} 1"#,
        r#"status_shed_rejected_total{layer="demo-work",reason="deadline"} 1"#,
    ] {
        assert!(metrics.contains(line), "no {line} in\n{metrics}");
    }
    // The dashboard's panel: the layer's figures, and a point a second in its charts.
    let (status, _, _, page) = call(&app, "GET", "/status", None).await;
    assert_eq!(status, StatusCode::OK);
    for expected in [
        r#"data-panel="Load shedding: /demo/work""#,
        "<dt>Limit</dt><dd>1</dd>",
        "<dt>Refused, queue full</dt><dd>1</dd>",
        "<dt>Cut off at the deadline</dt><dd>1</dd>",
        "Refused per second",
    ] {
        assert!(page.contains(expected), "no {expected} in the page");
    }
    let refused = page
        .split_once("Refused per second")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split(r#"<polyline class="series-0" points=""#).nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("a line of refusals in {page}"));
    // At least one sample above the axis (y 78): the second it refused.
    assert!(
        refused
            .split(' ')
            .any(|p| p.split(',').nth(1).is_some_and(|y| y != "78.0")),
        "{refused}"
    );
}

async fn put(app: &axum::Router, uri: &str, body: &str) -> StatusCode {
    let request = Request::put(uri)
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Body::from(body.to_owned()))
        .unwrap();
    app.clone().oneshot(request).await.unwrap().status()
}

#[tokio::test(start_paused = true)]
async fn the_pool_answers_by_node_and_shows_its_nodes() {
    let app = demo().await;
    let (status, _, _, body) = call(&app, "GET", "/demo/pool", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let node = serde_json::from_str::<serde_json::Value>(&body).unwrap()["node"]
        .as_u64()
        .unwrap();
    assert!(node < 3);

    // Every node hangs: the pool's timeout answers 504 after a second, a drop for the limiter.
    for i in 0..3 {
        assert_eq!(
            put(&app, &format!("/demo/pool/nodes/{i}"), r#"{"mode":"hang"}"#).await,
            StatusCode::OK
        );
    }
    let started = tokio::time::Instant::now();
    let (status, _, content_type, body) = call(&app, "GET", "/demo/pool", None).await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    assert_eq!(content_type, "application/json");
    assert_eq!(started.elapsed(), quickstart::pool::NODE_TIMEOUT);
    // Failing at once: 502, counted against the node.
    for i in 0..3 {
        put(
            &app,
            &format!("/demo/pool/nodes/{i}"),
            r#"{"mode":"error"}"#,
        )
        .await;
    }
    let (status, _, _, body) = call(&app, "GET", "/demo/pool", None).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(body.contains("failed"), "{body}");

    let (_, _, _, metrics) = call(&app, "GET", "/metrics", None).await;
    let count = |outcome: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| {
                l.starts_with("status_pool_requests_total{pool=\"demo\"")
                    && l.contains(&format!("outcome=\"{outcome}\""))
            })
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(
        (count("success"), count("drop"), count("ignore")),
        (1, 1, 1),
        "{metrics}"
    );

    // The pool is a dependency: one or two nodes failed (which ones took the calls is
    // random), graded MINOR with two of three healthy, MAJOR with one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (_, _, _, body) = call(&app, "GET", "/healthcheck/dependencies/pool", None).await;
    let pool: serde_json::Value = serde_json::from_str(&body).unwrap();
    let healthy = (pool["observedValue"].as_f64().unwrap() * 3.0).round() as u64;
    let expected = match healthy {
        1 => "MAJOR",
        2 => "MINOR",
        _ => panic!("{body}"),
    };
    assert_eq!(pool["rawStatus"], expected, "{body}");
    // And a panel of its nodes on the dashboard.
    let (_, _, _, page) = call(&app, "GET", "/status", None).await;
    for expected in [
        r#"data-panel="Node pool: /demo/pool""#,
        "<th scope=\"col\">weight</th>",
        "<td>node-2</td>",
    ] {
        assert!(page.contains(expected), "no {expected} in the page");
    }
    assert!(page.contains(&format!("<dt>Healthy nodes</dt><dd>{healthy} of 3</dd>")));
}

#[tokio::test(start_paused = true)]
async fn failures_of_demo_work_cull_the_instance_within_its_budget() {
    let demo = Demo::start(Config {
        admin_token: TOKEN.to_owned(),
        cull: quickstart::Cull {
            threshold: 3,
            interval: Duration::from_secs(1),
            min_uptime: Duration::ZERO,
            capacity: 1,
            ..quickstart::Cull::default()
        },
        ..Config::default()
    })
    .unwrap();
    let app = app(&demo);
    demo.registry.refresh_all().await;
    for _ in 0..2 {
        let (status, _, _, _) = call(&app, "GET", "/demo/work?ms=1&fail=true", None).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (status, _, _, _) = call(&app, "GET", "/healthcheck/live", None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "two failures are under the threshold"
    );
    call(&app, "GET", "/demo/work?ms=1&fail=true", None).await;
    tokio::time::timeout(Duration::from_secs(5), demo.culler.culled())
        .await
        .expect("culled within an interval");
    for probe in [
        "/healthcheck/live",
        "/healthcheck/ready",
        "/healthcheck/summary",
    ] {
        let (status, _, _, body) = call(&app, "GET", probe, None).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{probe}: {body}");
    }
    // Requests still work while the orchestrator replaces the instance.
    let (status, _, _, _) = call(&app, "GET", "/demo/work?ms=1", None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, _, _, metrics) = call(&app, "GET", "/metrics", None).await;
    for line in [
        "status_cull_culled 1",
        "status_cull_window_failures 3",
        r#"status_cull_denied_total{reason="spent"} 0"#,
    ] {
        assert!(metrics.contains(line), "no {line} in\n{metrics}");
    }
    let (_, _, _, page) = call(&app, "GET", "/status", None).await;
    assert!(page.contains("<dt>Culled</dt><dd>yes</dd>"));
    // The error rate of /demo/work is a dependency of its own: 3 failed of 4.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (_, _, _, body) = call(&app, "GET", "/healthcheck/dependencies/work-errors", None).await;
    let errors: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(errors["observedValue"], 0.75, "{body}");
}

#[tokio::test(start_paused = true)]
async fn chaos_calls_are_in_the_same_audit_trail_as_the_contracts() {
    let app = demo().await;
    assert_eq!(
        put(&app, "/demo/chaos/cache", r#"{"mode":"outage"}"#).await,
        StatusCode::OK
    );
    let (status, _, _, _) = call(&app, "PUT", "/demo/chaos/cache", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        put(
            &app,
            "/admin/drain",
            r#"{"ttlSeconds":60,"reason":"deploy"}"#
        )
        .await,
        StatusCode::OK
    );
    let (status, _, _, body) = call(&app, "GET", "/admin/audit", Some(TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    let trail: serde_json::Value = serde_json::from_str(&body).unwrap();
    let seen: Vec<(&str, u64)> = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["status"].as_u64().unwrap()))
        .collect();
    assert_eq!(seen, [("/admin/drain", 200), ("/demo/chaos/cache", 200)]);
    assert_eq!(trail["refusals"][0]["path"], "/demo/chaos/cache");
    assert_eq!(trail["refusedTotal"], 1);
    // The pool's node route checks the token too: it is in the trail.
    assert_eq!(
        put(&app, "/demo/pool/nodes/0", r#"{"mode":"error"}"#).await,
        StatusCode::OK
    );
    let (_, _, _, body) = call(&app, "GET", "/admin/audit", Some(TOKEN)).await;
    let trail: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(trail["entries"][0]["path"], "/demo/pool/nodes/0");
    // Reading the trail is no act: counted, never recorded.
    assert_eq!(trail["entries"][1]["path"], "/admin/drain", "{trail}");
    assert_eq!(trail["reads"][0]["route"], "GET /admin/audit", "{trail}");
    assert_eq!(trail["reads"][0]["count"], 1, "{trail}");
}
