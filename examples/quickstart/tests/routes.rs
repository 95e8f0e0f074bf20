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
