//! The node pool over a real socket: one of three nodes starts failing, loses its traffic
//! within a bucket period, and gets it back once it recovers.
//!
//! Real time (the pool's buckets age by the clock): about 45 seconds.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use quickstart::{app, Config, Demo};
use tokio::net::TcpListener;
use tokio::time::Instant;

use crate::common;

const TOKEN: &str = "pool-test-token";

/// One answer of `/demo/pool`: when, its code, and the node that served or failed it.
type Answer = (Instant, u16, Option<u64>);

async fn start() -> SocketAddr {
    let demo = Demo::start(Config {
        admin_token: TOKEN.to_owned(),
        ..Config::default()
    })
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app(&demo)).await.unwrap() });
    addr
}

async fn set(addr: SocketAddr, node: usize, mode: &str) {
    let (status, body) = common::request(
        addr,
        "PUT",
        &format!("/demo/pool/nodes/{node}"),
        Some(TOKEN),
        &format!(r#"{{"mode":"{mode}"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// Four clients calling `/demo/pool` back to back (10 ms apart) until dropped.
fn load(addr: SocketAddr, answers: &Arc<Mutex<Vec<Answer>>>) -> Vec<tokio::task::JoinHandle<()>> {
    (0..4)
        .map(|_| {
            let answers = Arc::clone(answers);
            tokio::spawn(async move {
                loop {
                    let (status, body) = common::request(addr, "GET", "/demo/pool", None, "").await;
                    let node = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v["node"].as_u64());
                    answers.lock().unwrap().push((Instant::now(), status, node));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
        })
        .collect()
}

/// Node 1's share and the share of 200s among the answers in `[from, to)`.
fn shares(answers: &[Answer], from: Instant, to: Instant) -> (f64, f64, usize) {
    let window: Vec<&Answer> = answers
        .iter()
        .filter(|(at, _, _)| *at >= from && *at < to)
        .collect();
    let n = window.len().max(1) as f64;
    let node1 = window
        .iter()
        .filter(|(_, _, node)| *node == Some(1))
        .count() as f64;
    let ok = window
        .iter()
        .filter(|(_, status, _)| *status == 200)
        .count() as f64;
    (node1 / n, ok / n, window.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_node_loses_its_traffic_and_gets_it_back() {
    let addr = start().await;
    let answers = Arc::new(Mutex::new(Vec::new()));
    let clients = load(addr, &answers);
    tokio::time::sleep(Duration::from_secs(2)).await;

    set(addr, 1, "error").await;
    let failed = Instant::now();
    tokio::time::sleep(Duration::from_secs(15)).await;
    let (node1, ok, n) = shares(
        &answers.lock().unwrap(),
        failed + Duration::from_secs(5),
        failed + Duration::from_secs(15),
    );
    eprintln!(
        "5-15 s after node 1 failed: {n} answers, node 1 served {:.2} %, {:.2} % succeeded",
        node1 * 100.0,
        ok * 100.0
    );
    assert!(n > 500, "only {n} answers");
    assert!(
        node1 < 0.03,
        "node 1 served {:.1} % after a bucket period",
        node1 * 100.0
    );
    assert!(ok >= 0.97, "{:.1} % succeeded", ok * 100.0);

    set(addr, 1, "ok").await;
    let recovered = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = Instant::now();
        let (node1, _, _) = shares(&answers.lock().unwrap(), now - Duration::from_secs(1), now);
        if node1 > 0.2 {
            eprintln!(
                "node 1 back to {:.1} % of a second's answers {:.0?} after it recovered",
                node1 * 100.0,
                recovered.elapsed()
            );
            break;
        }
        assert!(
            recovered.elapsed() < Duration::from_secs(30),
            "node 1's share is {:.1} % 30 s after it recovered",
            node1 * 100.0
        );
    }
    for client in clients {
        client.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_settings_are_refused_and_change_nothing() {
    let addr = start().await;
    for (path, token, body, want) in [
        ("/demo/pool/nodes/1", None, r#"{"mode":"error"}"#, 401),
        (
            "/demo/pool/nodes/7",
            Some(TOKEN),
            r#"{"mode":"error"}"#,
            404,
        ),
        (
            "/demo/pool/nodes/x",
            Some(TOKEN),
            r#"{"mode":"error"}"#,
            404,
        ),
        (
            "/demo/pool/nodes/1",
            Some(TOKEN),
            r#"{"mode":"broken"}"#,
            400,
        ),
        (
            "/demo/pool/nodes/1",
            Some(TOKEN),
            r#"{"mode":"slow","delayMs":600000}"#,
            400,
        ),
        (
            "/demo/pool/nodes/1",
            Some(TOKEN),
            r#"{"mode":"error","extra":1}"#,
            400,
        ),
        ("/demo/pool/nodes/1", Some(TOKEN), "{", 400),
    ] {
        let (status, body) = common::request(addr, "PUT", path, token, body).await;
        assert_eq!(status, want, "{path} {body}");
        assert!(body.contains("\"error\""), "{body}");
    }
    // Nothing was applied: every node still answers.
    for _ in 0..30 {
        let (status, body) = common::request(addr, "GET", "/demo/pool", None, "").await;
        assert_eq!(status, 200, "{body}");
    }
    let (_, metrics) = common::request(addr, "GET", "/metrics", None, "").await;
    for line in [
        r#"status_pool_requests_total{pool="demo",node="node-1",outcome="ignore"} 0"#,
        r#"status_pool_node_weight{pool="demo",node="node-0"} 1"#,
        r#"status_pool_holds_refused_total{pool="demo"} 0"#,
    ] {
        assert!(metrics.contains(line), "no {line} in\n{metrics}");
    }
}
