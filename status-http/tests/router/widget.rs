//! The page inside another: `/status/widget.json`, small and served as the v2 documents are,
//! and `/status/embed`, framed only by the origins the application names, while the page
//! itself stays unframable.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use status_core::CheckStatus;
use status_history::History;
use status_http::PublicGroup;

use crate::support::{call, fixture, get, Fixture};

async fn page(f: &Fixture, origins: &[&str]) -> (axum::Router, History) {
    let history = f.core_with(History::in_memory().incident_quiet(Duration::from_secs(60)));
    let mut settings = status_http::StatusPageSettings::default();
    settings.url = Some("https://status.shop.example".into());
    settings
        .public
        .push(PublicGroup::new("core", "Checkout <&>"));
    settings.publication = status_http::Publication::After(Duration::ZERO);
    settings.embed_origins = origins.iter().map(|o| (*o).to_owned()).collect();
    let page =
        status_http::StatusPage::new(f.registry.clone(), Some(history.clone()), "shop", settings);
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .status_page(page)
        .build();
    (app, history)
}

async fn settle(history: &History) {
    tokio::time::sleep(Duration::from_secs(2)).await;
    history.flush().await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
}

#[tokio::test(start_paused = true)]
async fn the_widget_says_the_word_the_components_and_what_happens_now() {
    let f = fixture().await;
    let (app, history) = page(&f, &[]).await;
    settle(&history).await;
    let a = get(&app, "/status/widget.json").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.header("access-control-allow-origin"), "*");
    let doc = a.json();
    assert_eq!(doc["status"]["indicator"], "none");
    assert_eq!(doc["page"]["url"], "https://status.shop.example");
    let names: Vec<&str> = doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Checkout <&>"), "{names:?}");
    assert_eq!(doc["incidents"], serde_json::json!([]));
    // Unchanged, it answers 304 to the client holding it.
    let etag = a.header("etag").to_owned();
    let held = call(
        &app,
        Request::get("/status/widget.json")
            .header("if-none-match", &etag)
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(held.status, StatusCode::NOT_MODIFIED);

    // An outage: the word, and the incident with its link.
    f.set(&f.db, CheckStatus::Outage).await;
    settle(&history).await;
    let doc = get(&app, "/status/widget.json").await.json();
    assert_ne!(doc["status"]["indicator"], "none");
    let incidents = doc["incidents"].as_array().unwrap();
    assert_eq!(incidents.len(), 1, "{doc}");
    assert!(incidents[0]["shortlink"]
        .as_str()
        .unwrap()
        .starts_with("https://status.shop.example"));
    // Smaller than the summary it is made beside.
    let summary = get(&app, "/api/v2/summary.json").await;
    let widget = get(&app, "/status/widget.json").await;
    assert!(
        widget.body.len() * 2 < summary.body.len(),
        "{} vs {}",
        widget.body.len(),
        summary.body.len()
    );

    // The embed says the same, as a page with no script.
    let embed = get(&app, "/status/embed").await;
    assert_eq!(embed.status, StatusCode::OK);
    assert!(
        embed.body.contains("Checkout &lt;&amp;&gt;"),
        "{}",
        embed.body
    );
    assert!(!embed.body.contains("<script"), "{}", embed.body);
    let name = incidents[0]["name"].as_str().unwrap();
    let escaped = name
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    assert!(embed.body.contains(&escaped), "{name}: {}", embed.body);
}

#[tokio::test(start_paused = true)]
async fn only_the_origins_the_application_names_may_frame_the_embed() {
    let f = fixture().await;
    let (closed, _) = page(&f, &[]).await;
    let csp = get(&closed, "/status/embed")
        .await
        .header("content-security-policy")
        .to_owned();
    assert!(csp.ends_with("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");

    let f = fixture().await;
    let (open, _) = page(&f, &["https://shop.example"]).await;
    let csp = get(&open, "/status/embed")
        .await
        .header("content-security-policy")
        .to_owned();
    assert!(
        csp.ends_with("frame-ancestors https://shop.example"),
        "the named origin: {csp}"
    );
    // The page itself is never framed.
    let page = get(&open, "/status/page").await;
    assert!(page
        .header("content-security-policy")
        .contains("frame-ancestors 'none'"));
}

/// Settings that cannot work fail the start, with what is wrong: a malformed origin (here one
/// that would write its own policy into the header), a subscriptions' secret too short, a
/// malformed SMTP URL; the builder of a page made of `Routes`' own settings says so too.
#[tokio::test(start_paused = true)]
async fn settings_that_cannot_work_are_refused_at_construction() {
    let f = fixture().await;
    let refused = |settings: status_http::StatusPageSettings| {
        status_http::StatusPage::try_new(f.registry.clone(), None, "shop", settings)
            .expect_err("refused")
    };
    let mut settings = status_http::StatusPageSettings::default();
    settings.embed_origins = vec!["https://evil.example; script-src *".into()];
    let e = refused(settings);
    assert!(
        e.is_invalid() && e.to_string().contains("not an origin"),
        "{e}"
    );

    let mut settings = status_http::StatusPageSettings::default();
    settings.subscriptions = Some(status_http::Subscriptions::new().secret(*b"0123456789"));
    let e = refused(settings);
    assert!(
        e.is_invalid() && e.to_string().contains("at least 32"),
        "{e}"
    );

    let mut settings = status_http::StatusPageSettings::default();
    settings.subscriptions = Some(
        status_http::Subscriptions::new()
            .smtp("smtp//mail.example.com")
            .mail_from("status@shop.example"),
    );
    let e = refused(settings);
    assert!(e.is_invalid() && e.to_string().contains("SMTP URL"), "{e}");

    let mut settings = status_http::StatusPageSettings::default();
    settings.subscriptions = Some(status_http::Subscriptions::new().secret([7u8; 32]));
    assert!(
        status_http::StatusPage::try_new(f.registry.clone(), None, "shop", settings).is_ok(),
        "32 bytes are enough"
    );
}
