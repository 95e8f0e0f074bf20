//! Overload is not failure, on the quickstart as it is (default settings, paused time): a burst
//! on `/demo/work` far past its capacity is shed (429 and 503) and never culls the instance,
//! while the handler's own 500s still do, and the culler says so at once.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use quickstart::{app, Config, Demo};
use status_core::CheckStatus;
use tower::ServiceExt;

async fn call(app: &axum::Router, uri: &str) -> StatusCode {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    app.clone().oneshot(request).await.unwrap().status()
}

/// The answers' codes of `clients` callers, each calling `uri` back to back (20 ms apart after
/// a refusal, as a client that backs off a little) for `length`.
async fn burst(
    app: &axum::Router,
    uri: &'static str,
    clients: usize,
    length: Duration,
) -> Vec<u16> {
    let end = tokio::time::Instant::now() + length;
    let callers: Vec<_> = (0..clients)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move {
                let mut codes = Vec::new();
                while tokio::time::Instant::now() < end {
                    let code = call(&app, uri).await;
                    codes.push(code.as_u16());
                    if code != StatusCode::OK {
                        tokio::time::sleep(Duration::from_millis(20)).await;
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

/// The quickstart with its defaults, past its minimum uptime (30 s).
async fn started() -> (Demo, axum::Router) {
    let demo = Demo::start(Config {
        admin_token: "burst-test".to_owned(),
        ..Config::default()
    })
    .unwrap();
    let app = app(&demo);
    tokio::time::sleep(demo.config.cull.min_uptime + Duration::from_secs(1)).await;
    (demo, app)
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_shed_and_never_culls() {
    let (demo, app) = started().await;
    // wrk -t2 -c400 -d6s '/demo/work?ms=100', as in the report that found the cull.
    let codes = burst(&app, "/demo/work?ms=100", 400, Duration::from_secs(6)).await;
    let count = |code| codes.iter().filter(|c| **c == code).count();
    let (ok, full, unavailable) = (count(200), count(429), count(503));
    eprintln!("burst: {ok} × 200, {full} × 429, {unavailable} × 503");
    assert!(ok > 100, "{ok} served");
    assert!(full > 10_000, "{full} refused with 429");
    assert!(unavailable > 0, "no queue timeout nor deadline");
    assert!(
        full + unavailable > 100 * demo.config.cull.threshold as usize,
        "refusals far past the cull threshold"
    );

    // Three looks of the culler (every 10 s ± 20 %) after the burst.
    tokio::time::sleep(Duration::from_secs(40)).await;
    let state = demo.culler.state();
    assert!(!state.culled, "culled by a burst: {:?}", state.last);
    assert_eq!(state.failures, 0, "{:?}", state.last);
    assert!(demo.registry.cull_hold().is_none());
    assert_eq!(demo.failures.count().0, 0);
    assert_eq!(call(&app, "/healthcheck/live").await, StatusCode::OK);
    assert_eq!(call(&app, "/healthcheck/ready").await, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn real_5xx_of_the_handler_still_cull_and_the_culler_says_so_at_once() {
    let (demo, app) = started().await;
    for _ in 0..demo.config.cull.threshold {
        let code = call(&app, "/demo/work?ms=1&fail=true").await;
        assert_eq!(code, StatusCode::INTERNAL_SERVER_ERROR);
    }
    tokio::time::timeout(Duration::from_secs(13), demo.culler.culled())
        .await
        .expect("culled within one look");
    assert_eq!(
        call(&app, "/healthcheck/live").await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    // Not "failure 1 of 3 before reporting MAJOR": a cull is a fact, not a failure to debounce.
    let culler = demo.registry.result("culler").unwrap();
    assert_eq!(culler.status(), CheckStatus::Major, "{}", culler.message());
    assert!(
        culler.message().starts_with("culled: "),
        "{}",
        culler.message()
    );
    // And it stays so, however long the instance lives on.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(
        demo.registry.result("culler").unwrap().status(),
        CheckStatus::Major
    );
}
