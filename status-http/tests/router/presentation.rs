//! One presentation path: the public view hides failure detail on every route, credentials
//! are masked in every view, and probe bodies carry ETags.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use status_core::{check, CheckStatus, Dependency, Urgency};
use tower::ServiceExt;

use crate::support::{call, fixture, get, gunzip, raw};

const SECRET: &str = "hunter2-launch-codes";

/// Every GET route of the contract (and variants of the probes' views).
const ROUTES: [&str; 19] = [
    "/healthcheck",
    "/healthcheck?format=health+json",
    "/healthcheck?verbose",
    "/healthcheck?exclude=cache",
    "/healthcheck/summary",
    "/healthcheck/summary?format=health+json",
    "/healthcheck/summary?verbose",
    "/healthcheck/live",
    "/healthcheck/ready",
    "/healthcheck/ready?verbose",
    "/healthcheck/startup",
    "/healthcheck/dependencies/vault",
    "/healthcheck/dependencies/db",
    "/features",
    "/features/writes",
    "/metrics",
    "/status",
    "/status?q=vault",
    "/status/assets/dashboard.js",
];

/// The first server-sent event of `/status/events`.
async fn first_event(app: &axum::Router) -> String {
    let response = app
        .clone()
        .oneshot(Request::get("/status/events").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
        .await
        .expect("the first event comes at once")
        .unwrap()
        .unwrap();
    String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_public_view_leaks_a_failure_message_nowhere() {
    let f = fixture().await;
    f.registry
        .add(
            Dependency::builder(
                "vault",
                check::ping(|| async { Err::<(), _>(std::io::Error::other(SECRET)) }),
            )
            .urgency(Urgency::Weak)
            .failures_before_outage(1)
            .build()
            .unwrap(),
        )
        .unwrap();
    f.registry.refresh("vault").await.unwrap();
    // A mute's reason and actor are an operator's words: admin-only in the public view.
    f.registry
        .mute(
            "db",
            status_core::MuteWindow::For(std::time::Duration::from_secs(600)),
            &format!("ticket {SECRET}"),
            Some(&format!("ops-{SECRET}")),
        )
        .unwrap();
    let detailed = status_http::Routes::new(&f.registry).build();
    let shown = get(&detailed, "/healthcheck").await.body;
    assert!(
        shown.contains(SECRET) && shown.contains(&format!("ticket {SECRET}")),
        "the detailed view shows them (or this test proves nothing)"
    );

    let public = status_http::Routes::new(&f.registry)
        .public_view(true)
        .appname("storefront")
        .build();
    for route in ROUTES {
        let answer = get(&public, route).await;
        assert!(
            answer.status.is_success() || answer.status == StatusCode::SERVICE_UNAVAILABLE,
            "{route}: {}",
            answer.status
        );
        assert!(
            !answer.body.contains(SECRET),
            "{route} leaks: {}",
            answer.body
        );
    }
    let event = first_event(&public).await;
    assert!(event.contains("vault"), "{event}");
    assert!(!event.contains(SECRET), "the event stream leaks: {event}");
    // The dashboard names the application the router was given.
    assert!(get(&public, "/status").await.body.contains("storefront"));
}

#[tokio::test(start_paused = true)]
async fn credentials_are_masked_in_every_view() {
    let f = fixture().await;
    f.registry
        .add(
            Dependency::builder(
                "orders-db",
                check::tiered(|| async {
                    (
                        CheckStatus::Outage,
                        "cannot reach postgres://app:pa55word@db:5432/orders (password=pa55word)",
                    )
                }),
            )
            .description("Orders at postgres://app:pa55word@db/orders")
            .urgency(Urgency::Weak)
            .build()
            .unwrap(),
        )
        .unwrap();
    f.registry.refresh("orders-db").await.unwrap();
    let app = f.app();
    for route in ROUTES
        .iter()
        .copied()
        .chain(["/healthcheck/dependencies/orders-db"])
    {
        let answer = get(&app, route).await;
        assert!(
            !answer.body.contains("pa55word"),
            "{route}: {}",
            answer.body
        );
    }
    let one = get(&app, "/healthcheck/dependencies/orders-db")
        .await
        .json();
    assert_eq!(
        one["errorMessage"],
        "cannot reach postgres://***@db:5432/orders (password=***)"
    );
    assert!(!first_event(&app).await.contains("pa55word"));
}

#[tokio::test(start_paused = true)]
async fn probes_answer_304_to_a_matching_etag_and_change_it_with_the_report() {
    let f = fixture().await;
    let app = f.app();
    for route in [
        "/healthcheck",
        "/healthcheck?verbose",
        "/healthcheck/summary",
        "/healthcheck/live",
    ] {
        let first = get(&app, route).await;
        let etag = first.header("etag").to_owned();
        assert!(etag.starts_with('"') && etag.len() > 2, "{route}: {etag:?}");
        let again = get(&app, route).await;
        assert_eq!(again.header("etag"), etag, "{route}: same report, same tag");
        let cached = call(
            &app,
            Request::get(route)
                .header("if-none-match", &etag)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(cached.status, StatusCode::NOT_MODIFIED, "{route}");
        assert!(cached.body.is_empty());
        assert_eq!(cached.header("etag"), etag);
        let other = call(
            &app,
            Request::get(route)
                .header("if-none-match", "\"something-else\"")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(other.status, StatusCode::OK, "{route}");
    }

    let before = get(&app, "/healthcheck").await.header("etag").to_owned();
    let summary_before = get(&app, "/healthcheck/summary")
        .await
        .header("etag")
        .to_owned();
    f.set(&f.cache, CheckStatus::Outage).await;
    let after = get(&app, "/healthcheck").await;
    assert_ne!(after.header("etag"), before, "a status change is a new tag");
    let stale_tag = call(
        &app,
        Request::get("/healthcheck")
            .header("if-none-match", &before)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(stale_tag.status, StatusCode::OK);

    // A hold changes the summary (and its tag) at once.
    let summary_changed = get(&app, "/healthcheck/summary")
        .await
        .header("etag")
        .to_owned();
    f.registry.drain("deploy", None, None).unwrap();
    let drained = get(&app, "/healthcheck/summary").await;
    assert_eq!(drained.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_ne!(drained.header("etag"), summary_changed);
    assert_ne!(summary_changed, summary_before);
}

#[tokio::test(start_paused = true)]
async fn core_errors_become_the_right_answers() {
    let f = fixture().await;
    let app = f.app();
    let missing = get(&app, "/healthcheck/dependencies/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.json()["error"], "no dependency named \"nope\"");
    let conflict: status_http::ApiError = f
        .registry
        .add_feature(status_core::Feature::builder("writes").build().unwrap())
        .unwrap_err()
        .into();
    assert_eq!(conflict.status(), StatusCode::CONFLICT);
    let invalid: status_http::ApiError = f.registry.drain(" ", None, None).unwrap_err().into();
    assert_eq!(invalid.status(), StatusCode::BAD_REQUEST);
    assert!(
        !invalid.message().contains("ttlSeconds"),
        "core speaks of the domain"
    );
}

#[tokio::test(start_paused = true)]
async fn large_probe_bodies_go_gzipped_to_clients_that_accept_it() {
    let f = fixture().await;
    let app = f.app();
    let (_, plain_headers, plain) = raw(&app, "/healthcheck", &[]).await;
    assert!(
        plain.len() >= 1024,
        "the fixture's report is {} bytes",
        plain.len()
    );
    assert!(plain_headers.get("content-encoding").is_none());
    assert_eq!(plain_headers["vary"], "accept-encoding");

    let accept = [("accept-encoding", "br;q=1.0, gzip;q=0.8")];
    let (status, headers, gzipped) = raw(&app, "/healthcheck", &accept).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-encoding"], "gzip");
    assert_eq!(headers["vary"], "accept-encoding");
    assert!(gzipped.len() < plain.len());
    assert_eq!(
        gunzip(&gzipped),
        plain,
        "the same representation, compressed"
    );
    let tag = headers["etag"].to_str().unwrap().to_owned();
    assert_ne!(
        tag,
        plain_headers["etag"].to_str().unwrap(),
        "one tag a representation"
    );

    let (status, headers, body) =
        raw(&app, "/healthcheck", &[accept[0], ("if-none-match", &tag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert!(headers.get("content-encoding").is_none());

    let (_, headers, _) = raw(&app, "/healthcheck", &[("accept-encoding", "gzip;q=0")]).await;
    assert!(
        headers.get("content-encoding").is_none(),
        "q=0 refuses gzip"
    );
    let (_, headers, _) = raw(&app, "/healthcheck/live", &accept).await;
    assert!(
        headers.get("content-encoding").is_none(),
        "too small to gain"
    );
    assert!(headers.get("vary").is_none());
}

#[tokio::test(start_paused = true)]
async fn zstd_goes_to_clients_that_accept_it_and_q_values_choose_between_codings() {
    let f = fixture().await;
    let app = f.app();
    let (_, plain_headers, plain) = raw(&app, "/healthcheck", &[]).await;

    // What browsers send: zstd wins a tie.
    let accept = [("accept-encoding", "gzip, deflate, br, zstd")];
    let (status, headers, packed) = raw(&app, "/healthcheck", &accept).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-encoding"], "zstd");
    assert_eq!(headers["vary"], "accept-encoding");
    assert_eq!(
        zstd::decode_all(&packed[..]).unwrap(),
        plain,
        "the same representation, compressed"
    );
    let tag = headers["etag"].to_str().unwrap().to_owned();
    assert!(tag.ends_with("-zstd\""), "{tag}");
    assert_ne!(tag, plain_headers["etag"].to_str().unwrap());
    let (status, headers, body) =
        raw(&app, "/healthcheck", &[accept[0], ("if-none-match", &tag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert!(headers.get("content-encoding").is_none());

    for (accept, expected) in [
        ("zstd;q=0.5, gzip", Some("gzip")),
        ("ZSTD;Q=0.9, gzip;q=0.4", Some("zstd")),
        ("*", Some("zstd")),
        ("*, zstd;q=0", Some("gzip")),
        ("gzip;q=0, *;q=0.1", Some("zstd")),
        ("*;q=0", None),
        ("br, deflate", None),
        ("identity", None),
    ] {
        let (_, headers, _) = raw(&app, "/healthcheck", &[("accept-encoding", accept)]).await;
        assert_eq!(
            headers.get("content-encoding").map(|v| v.to_str().unwrap()),
            expected,
            "Accept-Encoding: {accept}"
        );
    }
}
