//! The quickstart's notifications, to a real receiver over a socket: a chaos outage is told,
//! and with `notify.audit`, each admin call too.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use quickstart::{app, Config, Demo, NotifyConfig};
use serde_json::Value;

use crate::common;

const TOKEN: &str = "notify-test-token";

async fn wait_for(got: &Arc<Mutex<Vec<Value>>>, what: &str, test: impl Fn(&Value) -> bool) {
    for _ in 0..200 {
        if got.lock().unwrap().iter().any(&test) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not received in {:?}", got.lock().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chaos_outage_and_the_admin_calls_are_told() {
    let (url, got) = common::receiver().await;
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(500),
        admin_token: TOKEN.to_owned(),
        notify: NotifyConfig {
            webhook: Some(url),
            hold: Duration::ZERO,
            audit: true,
            ..NotifyConfig::default()
        },
        ..Config::default()
    })
    .unwrap();
    demo.registry.refresh_all().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app(&demo);
    tokio::spawn(async move { axum::serve(listener, router).await });

    let (code, _) = common::request(
        addr,
        "PUT",
        "/demo/chaos/primary-db",
        Some(TOKEN),
        r#"{"mode":"outage"}"#,
    )
    .await;
    assert_eq!(code, 200);
    wait_for(&got, "the outage", |m| {
        m["notice"]["kind"] == "changed" && m["notice"]["id"] == "primary-db"
    })
    .await;
    let (code, _) = common::request(
        addr,
        "PUT",
        "/admin/mutes/cache",
        Some("wrong"),
        r#"{"ttlSeconds":60,"reason":"x"}"#,
    )
    .await;
    assert_eq!(code, 401);
    // Refused calls are counted by action, told as one notice (alone, or in a digest).
    wait_for(&got, "the refused call", |m| {
        let refused = |n: &serde_json::Value| {
            n["kind"] == "refused" && n["action"] == "PUT /admin/mutes/cache" && n["calls"] == 1
        };
        refused(&m["notice"])
            || m["notice"]["notices"]
                .as_array()
                .is_some_and(|all| all.iter().any(refused))
    })
    .await;
    let chaos = got
        .lock()
        .unwrap()
        .iter()
        .filter(|m| m["notice"]["action"] == "PUT /demo/chaos/primary-db")
        .count();
    assert_eq!(chaos, 1, "the chaos call, told once");
    assert!(
        !got.lock()
            .unwrap()
            .iter()
            .any(|m| m.to_string().contains(TOKEN)),
        "no token in any message"
    );
    // Each sink's counts are in /metrics; its address is not.
    let (code, metrics) = common::request(addr, "GET", "/metrics", None, "").await;
    assert_eq!(code, 200);
    let delivered: u64 = metrics
        .lines()
        .find(|l| l.starts_with("status_notify_delivered_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(delivered >= 2, "{delivered}");
    assert!(metrics.contains("status_notify_queued{"), "{metrics}");
    assert!(!metrics.contains("127.0.0.1"), "no sink address in metrics");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_names_its_incident_and_where_the_page_tells_it() {
    let (url, got) = common::receiver().await;
    let dir = common::fresh_dir("quickstart-incident-link");
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(500),
        admin_token: TOKEN.to_owned(),
        history: Some(quickstart::HistoryTarget::Sqlite(dir.join("history.db"))),
        public_url: Some("https://status.shop.example/".to_owned()),
        // The link names a public incident: published at once, for the test.
        incident_public_after: Duration::ZERO,
        notify: NotifyConfig {
            webhook: Some(url),
            hold: Duration::ZERO,
            ..NotifyConfig::default()
        },
        ..Config::default()
    })
    .unwrap();
    demo.registry.refresh_all().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app(&demo);
    tokio::spawn(async move { axum::serve(listener, router).await });

    let (code, _) = common::request(
        addr,
        "PUT",
        "/demo/chaos/primary-db",
        Some(TOKEN),
        r#"{"mode":"outage"}"#,
    )
    .await;
    assert_eq!(code, 200);
    wait_for(&got, "the outage", |m| {
        m["notice"]["kind"] == "changed" && m["notice"]["id"] == "primary-db"
    })
    .await;
    let told = got
        .lock()
        .unwrap()
        .iter()
        .find(|m| m["notice"]["kind"] == "changed" && m["notice"]["id"] == "primary-db")
        .cloned()
        .unwrap();
    let id = told["incident"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no incident in {told}"))
        .to_owned();
    assert_eq!(
        told["incident"]["url"],
        format!("https://status.shop.example/status/page#incident-{id}")
    );
    let (code, body) =
        common::request(addr, "GET", "/api/v2/incidents/unresolved.json", None, "").await;
    assert_eq!(code, 200);
    let page: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(page["incidents"][0]["id"], id.as_str(), "{page}");
    assert_eq!(page["page"]["url"], "https://status.shop.example");
}
