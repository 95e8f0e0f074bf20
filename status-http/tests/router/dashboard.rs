//! The dashboard without JavaScript: everything renders on the server, escaped.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use status_core::CheckStatus;
use tower::ServiceExt;

use crate::support::{fixture, get};

#[tokio::test(start_paused = true)]
async fn the_page_renders_whole_on_the_server() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = f.app();
    let page = get(&app, "/status").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.header("content-type").starts_with("text/html"));
    assert!(page
        .header("content-security-policy")
        .contains("default-src 'none'"));
    for expected in [
        "System OUTAGE",
        "Because db (REQUIRED) is OUTAGE: says OUTAGE.",
        r#"id="dep-db""#,
        r#"data-status="OUTAGE""#,
        r#"id="dep-cache""#,
        r#"id="feature-writes" data-feature="writes" data-enabled="false""#,
        "db is OUTAGE, needs MINOR or better",
        "Uptime 24 h",
        "Not draining",
    ] {
        assert!(
            page.body.to_lowercase().contains(&expected.to_lowercase()),
            "missing {expected}"
        );
    }
    // Worst first: the OUTAGE group comes before the OK one.
    assert!(page.body.find("dep-db").unwrap() < page.body.find("dep-cache").unwrap());
}

#[tokio::test(start_paused = true)]
async fn filters_work_without_javascript() {
    let f = fixture().await;
    f.set(&f.db, CheckStatus::Outage).await;
    let app = f.app();
    let outage = get(&app, "/status?status=OUTAGE").await.body;
    assert!(outage.contains(r#"id="dep-db""#));
    assert!(!outage.contains(r#"id="dep-cache""#));
    assert!(outage.contains("1 of 3"));
    let weak = get(&app, "/status?urgency=WEAK&q=cache").await.body;
    assert!(weak.contains(r#"id="dep-cache""#) && !weak.contains(r#"id="dep-db""#));
    let none = get(&app, "/status?q=nothing-matches").await.body;
    assert!(none.contains("No dependency matches."));
}

#[tokio::test(start_paused = true)]
async fn text_is_escaped() {
    let registry = status_core::Registry::builder().appname("<i>x</i>").build();
    registry
        .add(
            status_core::Dependency::builder(
                "evil",
                status_core::check::tiered(|| async {
                    (CheckStatus::Major, "<script>alert(1)</script>")
                }),
            )
            .description("<img src=x onerror=alert(2)>")
            .documentation_url("javascript:alert(3)")
            .build()
            .unwrap(),
        )
        .unwrap();
    registry.refresh_all().await;
    let page = get(&status_http::routes(&registry), "/status").await.body;
    assert!(!page.contains("<script>alert"));
    assert!(!page.contains("<img src=x"));
    assert!(!page.contains("<i>x</i>"));
    assert!(
        page.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
        "the text is kept, escaped"
    );
    assert!(!page.contains("javascript:alert"));
}

#[tokio::test(start_paused = true)]
async fn assets_are_embedded() {
    let f = fixture().await;
    let app = f.app();
    for (path, kind) in [
        ("/status/assets/dashboard.css", "text/css"),
        ("/status/assets/dashboard.js", "text/javascript"),
        ("/status/assets/logo.svg", "image/svg+xml"),
    ] {
        let answer = get(&app, path).await;
        assert_eq!(answer.status, StatusCode::OK, "{path}");
        assert!(answer.header("content-type").starts_with(kind), "{path}");
        let body = answer.body.replace("http://www.w3.org/2000/svg", "");
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "{path} refers outside"
        );
    }
    assert_eq!(
        get(&app, "/status/assets/../../Cargo.toml").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(&app, "/status/assets/nope.js").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(start_paused = true)]
async fn events_start_with_the_live_part() {
    let f = fixture().await;
    let app = f.app();
    let response = app
        .oneshot(Request::get("/status/events").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let frame = body.frame().await.unwrap().unwrap().into_data().unwrap();
    let text = String::from_utf8(frame.to_vec()).unwrap();
    assert!(text.starts_with("event: live\n"), "{text:.200}");
    assert!(
        text.contains("data: <section class=\"banner ok\""),
        "{text:.300}"
    );
    assert!(text.contains("retry: 1000"));
}

#[tokio::test(start_paused = true)]
async fn event_streams_are_bounded() {
    let f = fixture().await;
    let app = f.app();
    let mut open = Vec::new();
    for _ in 0..64 {
        let response = app
            .clone()
            .oneshot(Request::get("/status/events").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        open.push(response);
    }
    let refused = get(&app, "/status/events").await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(refused.json()["error"]
        .as_str()
        .unwrap()
        .contains("too many"));
    // Closing streams frees their places.
    open.truncate(10);
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
    let again = app
        .clone()
        .oneshot(Request::get("/status/events").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn every_open_page_gets_each_render() {
    let f = fixture().await;
    let app = f.app();
    let mut pages = Vec::new();
    for _ in 0..3 {
        let response = app
            .clone()
            .oneshot(Request::get("/status/events").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let mut body = response.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(String::from_utf8_lossy(&first).contains("System OK"));
        pages.push(body);
    }
    f.set(&f.db, CheckStatus::Outage).await;
    for body in &mut pages {
        let next = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(String::from_utf8_lossy(&next).contains("System OUTAGE"));
    }
}

/// One client cannot take every stream: at most 8 from one address (429, `Retry-After`),
/// while another address still gets one; refusals are counted in `/metrics`.
#[tokio::test(start_paused = true)]
async fn event_streams_are_shared_fairly_between_addresses() {
    use axum::extract::ConnectInfo;
    use std::net::SocketAddr;

    let f = fixture().await;
    let history = status_history::History::in_memory().open();
    history.attach(&f.registry);
    let app = status_http::Routes::new(&f.registry)
        .history(history)
        .build();
    let from = |ip: &str, path: &str| {
        let mut request = Request::get(path).body(Body::empty()).unwrap();
        let addr: SocketAddr = format!("{ip}:40000").parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(addr));
        request
    };
    for path in ["/status/events", "/status/page/events"] {
        let mut open = Vec::new();
        for _ in 0..8 {
            let response = app
                .clone()
                .oneshot(from("203.0.113.7", path))
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::OK, "{path}");
            open.push(response);
        }
        let refused = app
            .clone()
            .oneshot(from("203.0.113.7", path))
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS, "{path}");
        assert_eq!(refused.headers()["retry-after"], "60");
        let other = app
            .clone()
            .oneshot(from("198.51.100.1", path))
            .await
            .unwrap();
        assert_eq!(
            other.status(),
            StatusCode::OK,
            "{path}: another address is served"
        );
        // Closing one frees its address's place.
        open.pop();
        for _ in 0..64 {
            tokio::task::yield_now().await;
        }
        let again = app
            .clone()
            .oneshot(from("203.0.113.7", path))
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::OK, "{path}");
    }
    let metrics = get(&app, "/metrics").await.body;
    for stream in ["dashboard", "page"] {
        assert!(
            metrics.contains(&format!(
                r#"status_http_event_streams_refused_total{{stream="{stream}",reason="address"}} 1"#
            )),
            "{metrics}"
        );
    }
}
