//! Maintenance means the same everywhere: with `primary-db` muted for a planned upgrade and
//! both it and `search` (which depends on it) failing, the status page and its JSON say
//! "under maintenance", no incident opens, no notice is sent, and the probes still answer
//! the true condition. Then the mute ends: the same failure is told and opens an incident,
//! so the silence was the maintenance's and not a pipeline that tells nothing.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quickstart::{app, Config, Demo, NotifyConfig};
use serde_json::Value;

use crate::common;

async fn json(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, Value) {
    let (code, body) = common::request(addr, "GET", path, token, "").await;
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (code, value)
}

/// The Statuspage status of the component `id` in `/api/v2/components.json`.
async fn component(addr: SocketAddr, id: &str) -> String {
    let (code, doc) = json(addr, "/api/v2/components.json", None).await;
    assert_eq!(code, 200, "{doc}");
    doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no component {id} in {doc}"))["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Polls `what` every 100 ms for up to 10 s.
async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut test: impl FnMut() -> F,
) {
    for _ in 0..100 {
        if test().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not in 10 s");
}

/// The notices received that are not an audit of an admin call.
fn notices(got: &Arc<Mutex<Vec<Value>>>) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .filter(|m| m["notice"]["kind"] != "audit")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_muted_root_is_a_maintenance_on_every_surface_and_the_probes_still_tell_the_truth() {
    const TOKEN: &str = "t";
    let (url, got) = common::receiver().await;
    let dir = common::fresh_dir("quickstart-maintenance");
    let demo = Demo::start(Config {
        period: Duration::from_millis(100),
        timeout: Duration::from_millis(500),
        admin_token: TOKEN.to_owned(),
        history: Some(quickstart::HistoryTarget::Sqlite(dir.join("history.db"))),
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

    let (code, body) = common::request(
        addr,
        "PUT",
        "/admin/mutes/primary-db",
        Some(TOKEN),
        r#"{"ttlSeconds":3600,"reason":"planned upgrade"}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    common::chaos(addr, "primary-db", "outage").await;
    common::chaos(addr, "search", "outage").await;

    // The probes answer the true condition: a mute never makes them lie.
    eventually("the outage, with search blocked by primary-db", || async {
        let (_, report) = json(addr, "/healthcheck", None).await;
        report["condition"] == "OUTAGE"
            && report.to_string().contains(r#""blockedBy":["primary-db"]"#)
    })
    .await;
    let (code, summary) = json(addr, "/healthcheck/summary", None).await;
    assert_eq!((code, &summary["condition"]), (503, &Value::from("OUTAGE")));

    // The page: search, which fails only through the muted database, is under maintenance,
    // and so is the group of both.
    assert_eq!(
        component(addr, "dependency-search").await,
        "under_maintenance"
    );
    assert_eq!(component(addr, "group-ready").await, "under_maintenance");
    let (code, page) = common::request(addr, "GET", "/status/page", None, "").await;
    assert_eq!(code, 200);
    assert!(page.contains("Under maintenance"), "{page}");
    assert!(!page.contains("Major outage"), "{page}");

    // Long enough for several notify ticks and history writes (every second): nothing told,
    // nothing opened.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (code, open) = json(addr, "/api/v2/incidents/unresolved.json", None).await;
    assert_eq!(code, 200);
    assert_eq!(open["incidents"], Value::Array(vec![]), "{open}");
    let (code, kept) = json(addr, "/admin/incidents", Some(TOKEN)).await;
    assert_eq!(code, 200);
    assert_eq!(kept["incidents"], Value::Array(vec![]), "{kept}");
    assert_eq!(
        notices(&got),
        Vec::<Value>::new(),
        "no notice in a maintenance"
    );

    // The mute ends on a database still down: now it is an outage, told and opened, with
    // search named as affected.
    let (code, body) =
        common::request(addr, "DELETE", "/admin/mutes/primary-db", Some(TOKEN), "").await;
    assert_eq!(code, 200, "{body}");
    eventually("primary-db told, naming search", || async {
        notices(&got).iter().any(|m| {
            m["notice"]["kind"] == "changed"
                && m["notice"]["id"] == "primary-db"
                && m["notice"]["alsoAffected"]
                    .as_array()
                    .is_some_and(|a| a.contains(&Value::from("search")))
        })
    })
    .await;
    eventually("an incident rooted at primary-db", || async {
        let (_, open) = json(addr, "/admin/incidents", Some(TOKEN)).await;
        open["incidents"]
            .as_array()
            .is_some_and(|list| list.iter().any(|i| i.to_string().contains("primary-db")))
    })
    .await;
    assert_eq!(component(addr, "dependency-search").await, "major_outage");
}
