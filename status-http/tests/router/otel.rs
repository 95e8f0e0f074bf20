//! The OTLP export's counts in `/metrics`, against a collector that refuses every request.
//! On real time: the export's reader and queues keep their own threads.

use std::time::Duration;

use status_core::check::tiered;
use status_core::{CheckStatus, Dependency, Registry};
use status_otel::Otlp;

use crate::support::get;

/// The value of the series `line` starts (`name{labels}`), if served.
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_collector_shows_as_failed_requests_and_dropped_spans() {
    let registry = Registry::builder().jitter(0.0).build();
    registry
        .add(
            Dependency::builder("db", tiered(|| async { (CheckStatus::Ok, "fine") }))
                .period(Duration::from_millis(20))
                .build()
                .unwrap(),
        )
        .unwrap();
    // Nothing listens on port 1 of loopback: every request is refused at once.
    let otlp = Otlp::builder()
        .endpoint("http://127.0.0.1:1")
        .interval(Duration::from_millis(50))
        .check_spans(true)
        .queue(2)
        .start(&registry)
        .unwrap();
    let app = status_http::Routes::new(&registry)
        .register_metrics(status_http::otel_metrics(&otlp))
        .build();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let body = loop {
        let body = get(&app, "/metrics").await.body;
        let failed = value(
            &body,
            "status_otlp_failed_requests_total{signal=\"metrics\"}",
        );
        let dropped = value(&body, "status_otlp_dropped_total{signal=\"traces\"}");
        if failed.is_some_and(|n| n >= 1.0) && dropped.is_some_and(|n| n >= 1.0) {
            break body;
        }
        assert!(tokio::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        value(&body, "status_otlp_requests_total{signal=\"metrics\"}"),
        Some(0.0)
    );
    assert_eq!(
        value(&body, "status_otlp_dropped_total{signal=\"logs\"}"),
        Some(0.0),
        "nothing changed, no record to drop"
    );
    assert!(
        value(&body, "status_otlp_queued").is_some_and(|n| n <= 4.0),
        "{body}"
    );
    tokio::task::spawn_blocking(move || otlp.shutdown())
        .await
        .unwrap();
}
