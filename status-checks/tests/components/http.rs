use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use status_checks::http::HttpCheck;
use status_core::check::Threshold;
use status_core::{CheckStatus, TIMED_OUT};

use crate::{refresh, registry_with};

/// A local server answering 200, 500, slowly, never, and as a status summary.
async fn server() -> String {
    let app = Router::new()
        .route("/ok", get(|| async { "all good" }))
        .route(
            "/fail",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "eventually"
            }),
        )
        .route("/never", get(std::future::pending::<&'static str>))
        .route(
            "/moved",
            get(|| async { axum::response::Redirect::temporary("/ok") }),
        )
        .route(
            "/summary-minor",
            get(|| async { Json(serde_json::json!({"condition": "MINOR", "dcStatus": "OK"})) }),
        )
        .route(
            "/summary-outage",
            get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    Json(serde_json::json!({"condition": "OUTAGE", "dcStatus": "FAILOVER"})),
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn status_of(check: HttpCheck, timeout: Duration) -> (CheckStatus, String) {
    let registry = registry_with(check, timeout).await;
    let result = refresh(&registry).await;
    (result.status(), result.message().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codes_bodies_latency_and_timeouts() {
    let base = server().await;
    let second = Duration::from_secs(2);

    let (status, message) = status_of(HttpCheck::new(&format!("{base}/ok")).unwrap(), second).await;
    assert_eq!(status, CheckStatus::Ok, "{message}");
    assert!(message.starts_with("HTTP 200 in"), "{message}");

    let (status, message) =
        status_of(HttpCheck::new(&format!("{base}/fail")).unwrap(), second).await;
    assert_eq!(status, CheckStatus::Outage);
    assert_eq!(message, "HTTP 500, expected 200..=299");

    let accepts_500 = HttpCheck::new(&format!("{base}/fail"))
        .unwrap()
        .expect_status(500..=500);
    assert_eq!(status_of(accepts_500, second).await.0, CheckStatus::Ok);

    let body = HttpCheck::new(&format!("{base}/ok"))
        .unwrap()
        .body_contains("good");
    assert_eq!(status_of(body, second).await.0, CheckStatus::Ok);
    let body = HttpCheck::new(&format!("{base}/ok"))
        .unwrap()
        .body_contains("bad");
    let (status, message) = status_of(body, second).await;
    assert_eq!(status, CheckStatus::Outage);
    assert!(message.contains("lacks \"bad\""), "{message}");

    // At least 300 ms: past the 100 ms OK limit, far below the MINOR one.
    let slow = HttpCheck::new(&format!("{base}/slow"))
        .unwrap()
        .latency(Threshold::at_most(100.0, 20_000.0, 30_000.0).unwrap());
    assert_eq!(
        status_of(slow, Duration::from_secs(5)).await.0,
        CheckStatus::Minor
    );

    // A redirect is judged as it is, never followed (to /ok, it would be OK).
    let moved = HttpCheck::new(&format!("{base}/moved")).unwrap();
    let (status, message) = status_of(moved, second).await;
    assert_eq!(status, CheckStatus::Outage, "{message}");
    assert_eq!(message, "HTTP 307, expected 200..=299");

    let never = HttpCheck::new(&format!("{base}/never")).unwrap();
    let (status, message) = status_of(never, Duration::from_millis(300)).await;
    assert_eq!((status, message.as_str()), (CheckStatus::Outage, TIMED_OUT));

    let nowhere = HttpCheck::new(&format!(
        "http://127.0.0.1:{}/",
        crate::servers::free_port()
    ))
    .unwrap();
    assert_eq!(status_of(nowhere, second).await.0, CheckStatus::Outage);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_status_summary_as_a_source() {
    let base = server().await;
    let second = Duration::from_secs(2);
    let minor = HttpCheck::status_summary(&format!("{base}/summary-minor")).unwrap();
    let (status, message) = status_of(minor, second).await;
    assert_eq!(status, CheckStatus::Minor);
    assert_eq!(message, "remote condition MINOR (HTTP 200)");
    let outage = HttpCheck::status_summary(&format!("{base}/summary-outage")).unwrap();
    assert_eq!(status_of(outage, second).await.0, CheckStatus::Outage);
    let not_a_summary = HttpCheck::status_summary(&format!("{base}/ok")).unwrap();
    let (status, message) = status_of(not_a_summary, second).await;
    assert_eq!(status, CheckStatus::Outage);
    assert_eq!(message, "HTTP 200 without a status summary");
}

#[test]
fn bad_urls_are_rejected() {
    assert!(HttpCheck::new("not a url").unwrap_err().is_invalid());
    assert!(HttpCheck::new("ftp://example.com/")
        .unwrap_err()
        .is_invalid());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_without_leaks() {
    let silent = crate::servers::Silent::start().await;
    let check = HttpCheck::new(&format!("http://127.0.0.1:{}/health", silent.port)).unwrap();
    crate::never_answers_without_leaks(&silent, check).await;
}
