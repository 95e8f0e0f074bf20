//! The quickstart over a real socket: break dependencies through the chaos API and watch the
//! probes follow.
//!
//! Real time, fast demo periods (50 ms); every wait is a poll with a deadline, never a fixed
//! sleep.

use std::net::SocketAddr;
use std::time::Duration;

use quickstart::{app, Config, Demo};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::common;

const TOKEN: &str = "socket-test-token";

struct Server {
    addr: SocketAddr,
}

async fn start() -> Server {
    let demo = Demo::start(Config {
        period: Duration::from_millis(50),
        timeout: Duration::from_millis(300),
        admin_token: TOKEN.to_owned(),
        ..Config::default()
    })
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app(&demo)).await.unwrap() });
    let server = Server { addr };
    server
        .until("startup", |s, _| s == 200, "/healthcheck/startup")
        .await;
    server
}

impl Server {
    async fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        common::request(self.addr, method, path, Some(TOKEN), body).await
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.request("GET", path, "").await;
        (
            status,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )
    }

    async fn chaos(&self, id: &str, mode: &str) {
        let (status, body) = self
            .request(
                "PUT",
                &format!("/demo/chaos/{id}"),
                &format!(r#"{{"mode":"{mode}"}}"#),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// Polls `path` until `done(status, body)`, for at most 20 s.
    async fn until(&self, what: &str, done: impl Fn(u16, &Value) -> bool, path: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (status, body) = self.get(path).await;
            if done(status, &body) {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: last answer {status} {body}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn dependency<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["results"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|list| list.as_array().unwrap())
        .find(|r| r["id"] == id)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn primary_db_failures_show_on_every_probe() {
    let server = start().await;
    let (status, summary) = server.get("/healthcheck/summary").await;
    assert_eq!((status, summary["condition"].as_str()), (200, Some("OK")));

    for (mode, message) in [
        ("hang", "Timed out prior to completion"),
        ("panic", "Check panicked: primary-db check panicked (chaos)"),
        ("outage", "unreachable (chaos)"),
    ] {
        server.chaos("primary-db", mode).await;
        let report = server
            .until(
                mode,
                |s, r| s == 503 && dependency(r, "primary-db")["errorMessage"] == message,
                "/healthcheck",
            )
            .await;
        assert_eq!(report["condition"], "OUTAGE");
        assert_eq!(report["dcStatus"], "FAILOVER");
        let (status, summary) = server.get("/healthcheck/summary").await;
        assert_eq!(status, 503, "{mode}");
        assert_eq!(summary["condition"], "OUTAGE");
        let (status, ready) = server.get("/healthcheck/ready").await;
        assert_eq!(status, 503, "{mode}");
        assert_eq!(ready["ready"], false);
        assert_eq!(server.get("/healthcheck/live").await.0, 200);
    }

    server.chaos("primary-db", "ok").await;
    server
        .until(
            "recovery",
            |s, r| s == 200 && r["condition"] == "OK",
            "/healthcheck",
        )
        .await;
    assert_eq!(server.get("/healthcheck/summary").await.0, 200);
    assert_eq!(server.get("/healthcheck/ready").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weak_cache_outage_keeps_the_summary_up_as_minor() {
    let server = start().await;
    server.chaos("cache", "outage").await;
    // After the hysteresis, the cache itself reports OUTAGE…
    server
        .until(
            "cache outage",
            |_, r| dependency(r, "cache")["status"] == "OUTAGE",
            "/healthcheck",
        )
        .await;
    // …and, being Weak, only makes the system MINOR.
    let (status, summary) = server.get("/healthcheck/summary").await;
    assert_eq!(status, 200);
    assert_eq!(summary["condition"], "MINOR");
    assert_eq!(summary["dcStatus"], "OK");
    assert_eq!(server.get("/healthcheck/ready").await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payments_outage_turns_checkout_off_until_overridden() {
    let server = start().await;
    let (_, checkout) = server.get("/features/checkout").await;
    assert_eq!(checkout["enabled"], true);
    assert_eq!(server.request("POST", "/checkout", "").await.0, 200);

    server.chaos("payments-api", "outage").await;
    server
        .until(
            "checkout off",
            |_, f| f["enabled"] == false,
            "/features/checkout",
        )
        .await;
    assert_eq!(server.request("POST", "/checkout", "").await.0, 503);

    let (status, body) = server
        .request(
            "PUT",
            "/features/checkout/override",
            r#"{"enabled":true,"ttlSeconds":1,"reason":"provider says it is fine"}"#,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let forced_at = Instant::now();
    let (_, checkout) = server.get("/features/checkout").await;
    assert_eq!(checkout["enabled"], true);
    assert_eq!(checkout["override"]["reason"], "provider says it is fine");
    assert_eq!(server.request("POST", "/checkout", "").await.0, 200);

    server
        .until(
            "override expiry",
            |_, f| f["enabled"] == false,
            "/features/checkout",
        )
        .await;
    assert!(
        forced_at.elapsed() >= Duration::from_millis(900),
        "ended before its TTL"
    );
    assert!(server.get("/features/checkout").await.1["override"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chaos_api_is_admin_only_and_validated() {
    let server = start().await;
    let (anonymous, _) = common::request(server.addr, "GET", "/demo/chaos", None, "").await;
    assert_eq!(anonymous, 401);
    let (status, _) = server
        .request("PUT", "/demo/chaos/primary-db", r#"{"mode":"explode"}"#)
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .request("PUT", "/demo/chaos/nope", r#"{"mode":"ok"}"#)
        .await;
    assert_eq!(status, 404);
    let (status, body) = server.request("GET", "/demo/chaos", "").await;
    assert_eq!(status, 200);
    assert!(
        body.contains(r#""primary-db":{"mode":"ok","delayMs":0}"#),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_and_postgres_flags_register_real_checks() {
    // Ports nobody listens on: the real checks run and report the refused connections.
    let closed = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let demo = Demo::start(Config {
        period: Duration::from_millis(50),
        timeout: Duration::from_millis(300),
        admin_token: TOKEN.to_owned(),
        redis: Some(format!("redis://127.0.0.1:{}/", closed())),
        postgres: Some(format!("host=127.0.0.1 port={} user=postgres", closed())),
        ..Config::default()
    })
    .unwrap();
    let report = demo.registry.refresh_all().await;
    for id in ["redis", "postgres"] {
        let result = report.result(id).unwrap();
        assert_eq!(result.status(), status_core::CheckStatus::Outage, "{id}");
        assert!(result.thrown().is_some(), "{id}: {}", result.message());
    }
    assert!(Demo::start(Config {
        redis: Some("not a url".to_owned()),
        ..Config::default()
    })
    .is_err());
}
