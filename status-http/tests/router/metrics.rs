//! `/metrics` in Prometheus text with the fixed names.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use status_core::CheckStatus;

use crate::support::{call, fixture, get};

/// Polls `/metrics` until `done` holds, for at most five seconds of real time: counters are
/// fed by a listener on its own thread.
async fn metrics_until(app: &axum::Router, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let body = get(app, "/metrics").await.body;
        if done(&body) || Instant::now() > deadline {
            return body;
        }
        std::thread::yield_now();
    }
}

#[tokio::test(start_paused = true)]
async fn metric_names_and_values() {
    let f = fixture().await;
    let app = f.app();
    f.set(&f.db, CheckStatus::Outage).await;
    let answer = get(&app, "/metrics").await;
    assert_eq!(answer.status, StatusCode::OK);
    // The classic format, under its content type: no `# EOF`, counters named by their samples.
    assert!(answer
        .header("content-type")
        .starts_with("text/plain; version=0.0.4"));
    assert!(!answer.body.contains("# EOF"), "{}", answer.body);
    assert!(answer.body.contains("# TYPE status_checks_total counter"));
    let body = metrics_until(&app, |b| {
        b.contains(r#"status_checks_total{id="db",outcome="outage"} 1"#)
    })
    .await;
    for expected in [
        "# TYPE status_system_severity gauge",
        "status_system_severity 3",
        r#"status_dependency_severity{id="db"} 3"#,
        r#"status_dependency_severity{id="cache"} 0"#,
        "# TYPE status_check_duration_seconds histogram",
        r#"status_check_duration_seconds_count{id="db"}"#,
        r#"status_checks_total{id="db",outcome="outage"} 1"#,
        r#"status_checks_total{id="db",outcome="timeout"} 0"#,
        r#"status_feature_enabled{feature="writes"} 0"#,
        r#"status_feature_enabled{feature="search-box"} 1"#,
    ] {
        assert!(body.contains(expected), "missing {expected}\n{body}");
    }

    let openmetrics = call(
        &app,
        Request::get("/metrics")
            .header("accept", "application/openmetrics-text; version=1.0.0")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert!(openmetrics
        .header("content-type")
        .starts_with("application/openmetrics-text"));
    assert!(openmetrics.body.ends_with("# EOF\n"));
    assert!(openmetrics.body.contains("# TYPE status_checks counter"));
}

#[tokio::test(start_paused = true)]
async fn removed_dependencies_leave_the_exposition() {
    let f = fixture().await;
    let app = f.app();
    f.registry.remove("cache").unwrap();
    let body = metrics_until(&app, |b| !b.contains(r#"id="cache""#)).await;
    assert!(!body.contains(r#"id="cache""#), "{body}");
    assert!(body.contains(r#"id="db""#));
}

#[tokio::test(start_paused = true)]
async fn a_measured_value_is_a_gauge_and_a_dependency_without_one_has_none() {
    use status_core::check::{threshold, tiered, Threshold};
    use status_core::{Dependency, Registry};
    let registry = Registry::builder().jitter(0.0).build();
    let depth = Threshold::at_most(100.0, 1_000.0, 10_000.0).unwrap();
    registry
        .add(
            Dependency::builder(
                "queue",
                threshold(depth, || async { Ok::<_, std::io::Error>(420.5) }),
            )
            .build()
            .unwrap(),
        )
        .unwrap();
    registry
        .add(
            Dependency::builder("flag", tiered(|| async { (CheckStatus::Ok, "on") }))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    let app = status_http::Routes::new(&registry).build();
    let body = get(&app, "/metrics").await.body;
    assert!(
        body.contains("# TYPE status_dependency_value gauge"),
        "{body}"
    );
    assert!(
        body.contains(r#"status_dependency_value{id="queue"} 420.5"#),
        "{body}"
    );
    assert!(
        !body.contains(r#"status_dependency_value{id="flag"}"#),
        "{body}"
    );
}
