//! `/openapi.json` describes every route of the router, and the probes answer within it.

use axum::http::StatusCode;
use serde_json::Value;

use crate::support::{fixture, get};

const ROUTES: [(&str, &str); 21] = [
    ("get", "/healthcheck"),
    ("get", "/healthcheck/summary"),
    ("get", "/healthcheck/live"),
    ("get", "/healthcheck/ready"),
    ("get", "/healthcheck/startup"),
    ("get", "/healthcheck/dependencies/{id}"),
    ("post", "/healthcheck/dependencies/{id}/refresh"),
    ("get", "/features"),
    ("get", "/features/{name}"),
    ("put", "/features/{name}/override"),
    ("delete", "/features/{name}/override"),
    ("put", "/admin/drain"),
    ("delete", "/admin/drain"),
    ("get", "/metrics"),
    ("get", "/status"),
    ("get", "/status/events"),
    ("get", "/status/assets/{file}"),
    ("get", "/openapi.json"),
    ("get", "/fleet"),
    ("get", "/fleet/datacenters/{dc}"),
    ("get", "/status/fleet"),
];

#[tokio::test(start_paused = true)]
async fn every_route_is_described_and_answers_within_the_description() {
    let f = fixture().await;
    let app = f.app();
    let answer = get(&app, "/openapi.json").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("content-type"), "application/json");
    let doc: Value = answer.json();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let described: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(described, ROUTES.len(), "{:?}", paths.keys());
    for (method, path) in ROUTES {
        let operation = &doc["paths"][path][method];
        assert!(operation.is_object(), "{method} {path} is not described");
        let admin = path.starts_with("/admin") || method != "get";
        assert_eq!(
            operation.get("security").is_some(),
            admin,
            "{method} {path}: bearer token required exactly on admin calls"
        );
        if method == "get" && !path.contains('{') && path != "/status/events" {
            let answer = get(&app, path).await;
            let responses = operation["responses"].as_object().unwrap();
            assert!(
                responses.contains_key(answer.status.as_str()),
                "{path} answered {} outside {:?}",
                answer.status,
                responses.keys()
            );
        }
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "Report",
        "Summary",
        "HealthJson",
        "Error",
        "Drain",
        "Feature",
    ] {
        assert!(schemas.contains_key(name), "no schema {name}");
    }
}
