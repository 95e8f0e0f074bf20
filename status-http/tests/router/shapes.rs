//! Snapshots of every other JSON and text shape, so a change of shape is a visible diff.

use std::time::Duration;

use axum::http::Method;
use status_core::CheckStatus;

use crate::support::{admin, fixture, get, unchecked, TOKEN};

#[tokio::test(start_paused = true)]
async fn shapes() {
    let f = fixture().await;
    let app = f.app();
    f.set(&f.cache, CheckStatus::Outage).await;
    tokio::time::sleep(Duration::from_secs(61)).await;
    f.registry.refresh_all().await;

    let shapes = [
        ("live", get(&app, "/healthcheck/live").await.body),
        (
            "live_verbose",
            get(&app, "/healthcheck/live?verbose").await.body,
        ),
        ("ready", get(&app, "/healthcheck/ready").await.body),
        ("startup", get(&app, "/healthcheck/startup").await.body),
        (
            "dependency",
            get(&app, "/healthcheck/dependencies/cache").await.body,
        ),
        ("features", get(&app, "/features").await.body),
        (
            "not_found",
            get(&app, "/healthcheck/dependencies/nope").await.body,
        ),
        (
            "override",
            admin(
                &app,
                Method::PUT,
                "/features/writes/override",
                Some(TOKEN),
                r#"{"enabled":false,"ttlSeconds":600,"reason":"migration","actor":"alice"}"#,
            )
            .await
            .body,
        ),
        (
            "drain",
            admin(
                &app,
                Method::PUT,
                "/admin/drain",
                Some(TOKEN),
                r#"{"ttlSeconds":300,"reason":"deploy"}"#,
            )
            .await
            .body,
        ),
        (
            "summary_draining",
            get(&app, "/healthcheck/summary").await.body,
        ),
        (
            "undrain",
            admin(&app, Method::DELETE, "/admin/drain", Some(TOKEN), "")
                .await
                .body,
        ),
        (
            "unauthorized",
            admin(&app, Method::PUT, "/admin/drain", None, "")
                .await
                .body,
        ),
        (
            "bad_request",
            admin(&app, Method::PUT, "/admin/drain", Some(TOKEN), "{")
                .await
                .body,
        ),
    ];
    for (name, body) in shapes {
        insta::assert_snapshot!(name, body);
    }
}

#[tokio::test(start_paused = true)]
async fn startup_pending_shape() {
    let f = unchecked();
    insta::assert_snapshot!(get(&f.app(), "/healthcheck/startup").await.body);
}
