//! The subscribers' door against strangers, with a real webhook receiver on loopback: a
//! webhook is told nothing until it answers its challenge, the door answers alike whether an
//! address is known or not, and a link opened by a mail's scanner changes nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::response::IntoResponse;
use serde_json::Value;
use status_history::{History, SubscriberKind};

use crate::support::{call, fixture, get, Answer, Fixture};

/// What the receiver was posted, by path.
type Posts = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook receiver: `/good` answers a challenge with its value (as JSON), `/bad` answers
/// `ok` to everything.
async fn receiver() -> (String, Posts) {
    let posts: Posts = Arc::default();
    let kept = Arc::clone(&posts);
    let app = axum::Router::new().route(
        "/{path}",
        axum::routing::post(
            move |axum::extract::Path(path): axum::extract::Path<String>,
                  axum::Json(body): axum::Json<Value>| {
                let kept = Arc::clone(&kept);
                async move {
                    kept.lock().unwrap().push((path.clone(), body.clone()));
                    if path == "good" {
                        axum::Json(serde_json::json!({ "challenge": body["challenge"] }))
                            .into_response()
                    } else {
                        "ok".into_response()
                    }
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, posts)
}

async fn page(f: &Fixture) -> (axum::Router, History) {
    let history = History::in_memory().open();
    history.attach(&f.registry);
    let mut settings = status_http::StatusPageSettings::default();
    settings.url = Some("https://status.shop.example".into());
    settings.subscriptions = Some(
        status_http::Subscriptions::new()
            .allow_private_webhooks(true)
            // Nothing listens on port 1: mail is refused, quietly, beside the answer.
            .smtp("smtp://127.0.0.1:1")
            .mail_from("status@shop.example"),
    );
    let page =
        status_http::StatusPage::new(f.registry.clone(), Some(history.clone()), "shop", settings);
    let app = status_http::Routes::new(&f.registry)
        .history(history.clone())
        .status_page(page)
        .build();
    while history.subscribers().await.is_err() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (app, history)
}

async fn subscribe(app: &axum::Router, body: String) -> Answer {
    call(
        app,
        Request::post("/status/page/subscriptions")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap(),
    )
    .await
}

async fn confirmed(history: &History, kind: SubscriberKind, address: &str) -> Option<bool> {
    let s = history.subscriber(kind, address).await.unwrap()?;
    Some(s.confirmed.is_some())
}

/// Waits, up to 10 s, for `what`.
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < Duration::from_secs(10), "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_is_confirmed_only_when_it_answers_its_challenge() {
    let f = fixture().await;
    let (app, history) = page(&f).await;
    let (base, posts) = receiver().await;
    let (good, bad) = (format!("{base}/good"), format!("{base}/bad"));
    for url in [&good, &bad] {
        let a = subscribe(&app, format!(r#"{{"webhook":"{url}"}}"#)).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{}", a.body);
        assert_eq!(a.json()["status"], "pending");
    }
    until("the good webhook confirmed", || async {
        confirmed(&history, SubscriberKind::Webhook, &good).await == Some(true)
    })
    .await;
    until("the bad webhook challenged", || async {
        posts.lock().unwrap().iter().any(|(p, _)| p == "bad")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        confirmed(&history, SubscriberKind::Webhook, &bad).await,
        Some(false),
        "an answer that is not the challenge confirms nothing"
    );
    let posts = posts.lock().unwrap().clone();
    let (_, challenge) = posts.iter().find(|(p, _)| p == "good").unwrap();
    assert_eq!(challenge["type"], "url_verification");
    assert_eq!(challenge["challenge"].as_str().unwrap().len(), 32);
    let unsubscribe = challenge["meta"]["unsubscribe"].as_str().unwrap();
    assert!(
        unsubscribe.starts_with(
            "https://status.shop.example/status/page/subscriptions/unsubscribe?token="
        ),
        "{unsubscribe}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_door_answers_alike_whether_an_address_is_known_or_not() {
    let f = fixture().await;
    let (app, history) = page(&f).await;
    let (base, _) = receiver().await;
    let good = format!("{base}/good");
    let new = subscribe(&app, format!(r#"{{"webhook":"{good}"}}"#)).await;
    until("confirmed", || async {
        confirmed(&history, SubscriberKind::Webhook, &good).await == Some(true)
    })
    .await;
    let known = subscribe(&app, format!(r#"{{"webhook":"{good}"}}"#)).await;
    let other = subscribe(&app, format!(r#"{{"webhook":"{base}/other"}}"#)).await;
    assert_eq!((known.status, &known.body), (new.status, &new.body));
    assert_eq!((other.status, &other.body), (new.status, &new.body));
    // Mail: a new address, the same asked again within its cooldown, and another.
    let first = subscribe(&app, r#"{"email":"ana@example.com"}"#.into()).await;
    let again = subscribe(&app, r#"{"email":"Ana@Example.com"}"#.into()).await;
    let bob = subscribe(&app, r#"{"email":"bob@example.com"}"#.into()).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    assert_eq!((again.status, &again.body), (first.status, &first.body));
    assert_eq!((bob.status, &bob.body), (first.status, &first.body));
    assert!(again.headers.get("retry-after").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_opened_by_a_scanner_confirms_and_unsubscribes_no_one() {
    let f = fixture().await;
    let (app, history) = page(&f).await;
    let (base, posts) = receiver().await;
    let bad = format!("{base}/bad");
    subscribe(&app, format!(r#"{{"webhook":"{bad}"}}"#)).await;
    until("challenged", || async { !posts.lock().unwrap().is_empty() }).await;
    let link = posts.lock().unwrap()[0].1["meta"]["unsubscribe"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = link.split("token=").nth(1).unwrap().to_owned();
    let confirm = format!("/status/page/subscriptions/confirm?token={token}");
    let unsubscribe = format!("/status/page/subscriptions/unsubscribe?token={token}");

    // A scanner opens both links: pages with a button, nothing changed.
    for uri in [&confirm, &unsubscribe] {
        let a = get(&app, uri).await;
        assert_eq!(a.status, StatusCode::OK, "{uri}: {}", a.body);
        assert!(a.body.contains(r#"<form method="post""#), "{}", a.body);
        assert!(a.body.contains(&format!("?token={token}")), "{}", a.body);
        assert_eq!(a.header("referrer-policy"), "no-referrer");
        assert_eq!(a.header("cache-control"), "no-store");
    }
    assert_eq!(
        confirmed(&history, SubscriberKind::Webhook, &bad).await,
        Some(false),
        "a GET confirmed"
    );
    // The button's POST acts.
    let a = call(&app, Request::post(&confirm).body(Body::empty()).unwrap()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        confirmed(&history, SubscriberKind::Webhook, &bad).await,
        Some(true)
    );
    assert_eq!(get(&app, &unsubscribe).await.status, StatusCode::OK);
    assert!(confirmed(&history, SubscriberKind::Webhook, &bad)
        .await
        .is_some());
    let a = call(
        &app,
        Request::post(&unsubscribe).body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(
        confirmed(&history, SubscriberKind::Webhook, &bad).await,
        None
    );
}
