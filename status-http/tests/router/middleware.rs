//! The health gate and the feature gate.

use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use status_core::CheckStatus;
use status_http::middleware::{FeatureGateLayer, HealthGateLayer};

use crate::support::{fixture, get as fetch};

#[tokio::test(start_paused = true)]
async fn the_health_gate_sheds_during_an_outage() {
    let f = fixture().await;
    let app = Router::new()
        .route("/work", get(|| async { "done" }))
        .layer(HealthGateLayer::new(&f.registry).retry_after(Duration::from_secs(30)));
    let ok = fetch(&app, "/work").await;
    assert_eq!((ok.status, ok.body.as_str()), (StatusCode::OK, "done"));

    f.set(&f.search, CheckStatus::Outage).await; // MAJOR: still served
    assert_eq!(fetch(&app, "/work").await.status, StatusCode::OK);

    f.set(&f.db, CheckStatus::Outage).await;
    let shed = fetch(&app, "/work").await;
    assert_eq!(shed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(shed.header("retry-after"), "30");
    // The application's callers are told no dependency's name, unless it says so.
    assert_eq!(shed.json()["error"], "service unavailable");
    let explained = Router::new()
        .route("/work", get(|| async { "done" }))
        .layer(HealthGateLayer::new(&f.registry).explain(true));
    assert_eq!(
        fetch(&explained, "/work").await.json()["error"],
        "service unavailable: system is OUTAGE (db is OUTAGE)"
    );

    f.set(&f.db, CheckStatus::Ok).await;
    assert_eq!(fetch(&app, "/work").await.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn a_fail_open_gate_serves_and_marks_responses() {
    let f = fixture().await;
    let app = Router::new()
        .route("/work", get(|| async { "done" }))
        .layer(HealthGateLayer::new(&f.registry).fail_open(true));
    assert_eq!(fetch(&app, "/work").await.header("x-status-condition"), "");
    f.set(&f.db, CheckStatus::Outage).await;
    let served = fetch(&app, "/work").await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(served.body, "done");
    assert_eq!(served.header("x-status-condition"), "OUTAGE");
}

#[tokio::test(start_paused = true)]
async fn the_feature_gate_follows_its_feature() {
    let f = fixture().await;
    let writes = f.registry.feature("writes").unwrap();
    let app = Router::new()
        .route("/write", get(|| async { "written" }))
        .layer(FeatureGateLayer::new(writes.clone()));
    let explained = Router::new()
        .route("/write", get(|| async { "written" }))
        .layer(FeatureGateLayer::new(writes).explain(true));
    assert_eq!(fetch(&app, "/write").await.status, StatusCode::OK);
    f.set(&f.db, CheckStatus::Major).await;
    let off = fetch(&app, "/write").await;
    assert_eq!(off.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(off.header("retry-after"), "10");
    // The feature is named, not the dependency, unless the application says so.
    assert_eq!(off.json()["error"], "feature writes is unavailable");
    assert_eq!(
        fetch(&explained, "/write").await.json()["error"],
        "feature writes is disabled: db is MAJOR, needs MINOR or better"
    );
}
