//! Overload is not failure: a burst through the shedding layer counts no failure, with the
//! failure counter inside the layer or outside it, while the handler's own 5xx still count.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::Router;
use status_http::traffic::{server_errors, shedding};
use status_traffic::count::{CountLayer, Failures};
use status_traffic::limit::{Fixed, Limiter};
use status_traffic::shed::ShedLayer;
use tower::ServiceExt;

/// Work that takes 100 ms, or fails at once with a 503 of its own when `?fail` is given.
async fn work(uri: axum::http::Uri) -> StatusCode {
    if uri.query() == Some("fail") {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    StatusCode::OK
}

fn layer() -> ShedLayer<axum::extract::Request> {
    ShedLayer::new(Limiter::new(Fixed::new(4)))
        .queue(16)
        .queue_timeout(Duration::from_millis(300))
        .deadline(Duration::from_millis(500))
}

/// `/work` with the counter outside the shedding layer (`outside`) or inside it.
fn app(failures: &Failures, outside: bool) -> Router {
    let count = CountLayer::new(failures.clone(), server_errors::<Infallible>);
    let route = if outside {
        get(work).layer(shedding(layer())).layer(count)
    } else {
        get(work)
            .layer::<_, Infallible>(count)
            .layer(shedding(layer()))
    };
    Router::new().route("/work", route)
}

/// `clients` callers, each calling back to back (10 ms apart after a refusal) for `length`:
/// the answers' codes.
async fn burst(app: &Router, uri: &'static str, clients: usize, length: Duration) -> Vec<u16> {
    let end = tokio::time::Instant::now() + length;
    let callers: Vec<_> = (0..clients)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut codes = Vec::new();
                while tokio::time::Instant::now() < end {
                    let request = Request::get(uri).body(Body::empty()).unwrap();
                    let code = app.clone().oneshot(request).await.unwrap().status();
                    codes.push(code.as_u16());
                    if code != StatusCode::OK {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                codes
            })
        })
        .collect();
    let mut codes = Vec::new();
    for caller in callers {
        codes.extend(caller.await.unwrap());
    }
    codes
}

#[tokio::test(start_paused = true)]
async fn a_burst_counts_no_failure_whatever_the_order_of_the_layers() {
    for outside in [true, false] {
        let failures = Failures::new(Duration::from_secs(60));
        let app = app(&failures, outside);
        let codes = burst(&app, "/work", 100, Duration::from_secs(3)).await;
        let count = |code| codes.iter().filter(|c| **c == code).count();
        let (ok, full, unavailable) = (count(200), count(429), count(503));
        assert!(ok > 50, "{ok} served");
        assert!(full > 1000, "{full} refused with 429");
        assert!(unavailable > 0, "no queue timeout or deadline");
        assert_eq!(ok + full + unavailable, codes.len());
        let (failed, requests) = failures.count();
        assert_eq!(failed, 0, "counter outside: {outside}");
        assert_eq!(requests, ok as u64, "only the work that ran counts");
    }
}

#[tokio::test(start_paused = true)]
async fn the_handlers_own_5xx_still_count_whatever_the_order() {
    for outside in [true, false] {
        let failures = Failures::new(Duration::from_secs(60));
        let app = app(&failures, outside);
        for _ in 0..10 {
            let request = Request::get("/work?fail").body(Body::empty()).unwrap();
            let answer = app.clone().oneshot(request).await.unwrap();
            assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
        }
        assert_eq!(failures.count(), (10, 10), "counter outside: {outside}");
    }
}
