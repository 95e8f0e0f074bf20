//! Graceful shutdown drains first, then lets the server stop.

use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::support::{fixture, get};

#[tokio::test(start_paused = true)]
async fn readiness_fails_for_the_delay_before_shutdown() {
    let f = fixture().await;
    let app = f.app();
    let (trigger, signal) = oneshot::channel::<()>();
    let shutdown = tokio::spawn(status_http::shutdown::drain_then(
        &f.registry,
        Duration::from_secs(5),
        async move {
            signal.await.ok();
        },
    ));
    assert_eq!(get(&app, "/healthcheck/ready").await.status, StatusCode::OK);

    let signalled = Instant::now();
    trigger.send(()).unwrap();
    tokio::task::yield_now().await;
    assert_eq!(
        get(&app, "/healthcheck/ready").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(
        get(&app, "/healthcheck/summary").await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(get(&app, "/healthcheck/live").await.status, StatusCode::OK);
    assert!(!shutdown.is_finished());

    shutdown.await.unwrap();
    assert_eq!(signalled.elapsed(), Duration::from_secs(5));
    assert_eq!(f.registry.drain_state().unwrap().reason, "shutting down");
}
