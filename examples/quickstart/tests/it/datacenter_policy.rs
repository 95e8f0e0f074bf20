//! The data-center policy's two thresholds on real processes (seven quickstarts, two data
//! centers, one real `redis-server`): GSLB removes a data center first (below a count or a
//! share of serving instances); below a lower share, readiness fails open inside it. Each
//! combination, and a rule whose thresholds cross refused at start.

use std::net::SocketAddr;
use std::process::Command;

use crate::common;

use crate::common::{chaos, get_json as get, until};
use crate::processes::{free_port, quickstart, redis_server, Process};

/// The policy under test: removed below 3 serving or half; readiness fails open below 30 %;
/// no failure is shared (at least 10 others), so only the thresholds excuse anyone.
const POLICY: [&str; 9] = [
    "--fleet-aware-readiness",
    "--fleet-healthy-share",
    "0.5",
    "--fleet-min-serving",
    "3",
    "--ready-fail-open-share",
    "0.3",
    "--fleet-shared-min",
    "10",
];

async fn instance(redis: u16, id: &str, dc: &str) -> (Process, SocketAddr) {
    let redis_url = format!("redis://127.0.0.1:{redis}/");
    let mut args = vec![
        "--fleet-redis",
        &redis_url,
        "--datacenter",
        dc,
        "--instance-id",
        id,
    ];
    args.extend(["--fleet-ttl-ms", "600"]);
    args.extend(POLICY);
    quickstart(&args).await
}

async fn outage(addr: SocketAddr, mode: &str) {
    chaos(addr, "primary-db", mode).await;
}

/// dc-1 as GSLB sees it: the code, and whether readiness fails open inside it.
async fn dc1(addr: SocketAddr) -> (u16, bool) {
    let (status, body) = get(addr, "/fleet/datacenters/dc-1").await;
    (status, body["readyFailOpen"] == true)
}

/// Readiness: the code and the rule that answered.
async fn ready(addr: SocketAddr) -> (u16, String) {
    let (status, body) = get(addr, "/healthcheck/ready").await;
    (status, body["rule"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gslb_removes_a_datacenter_first_then_readiness_fails_open_inside_it() {
    let (_redis, redis_port) = redis_server();
    let mut dc1_instances = Vec::new();
    for id in ["e1", "e2", "e3", "e4"] {
        dc1_instances.push(instance(redis_port, id, "dc-1").await);
    }
    // dc-2: three, healthy throughout (so that the fleet never fails open as a whole).
    let _west = [
        instance(redis_port, "w1", "dc-2").await,
        instance(redis_port, "w2", "dc-2").await,
        instance(redis_port, "w3", "dc-2").await,
    ];
    let e: Vec<SocketAddr> = dc1_instances.iter().map(|(_, a)| *a).collect();
    until(e[3], "dc-1 healthy", async || {
        dc1(e[3]).await == (200, false)
    })
    .await;

    // Above both: one of four fails; dc-1 serves (3 of 4), the instance is not ready.
    outage(e[0], "outage").await;
    until(e[0], "e1 not ready, by its own rule", async || {
        ready(e[0]).await == (503, "instance".into())
    })
    .await;
    assert_eq!(dc1(e[3]).await, (200, false));

    // Removed from GSLB, readiness not failing open: two serve, fewer than three (half,
    // still at or above 30 %). The failing ones stay out.
    outage(e[1], "outage").await;
    until(e[3], "dc-1 removed", async || {
        dc1(e[3]).await == (503, false)
    })
    .await;
    for addr in &e[..2] {
        assert_eq!(ready(*addr).await, (503, "instance".into()));
    }

    // Below both: one of four serves (25 %, under 30 %): removed, and every instance of it
    // stays ready, saying why.
    outage(e[2], "outage").await;
    until(e[3], "dc-1 failing readiness open", async || {
        dc1(e[3]).await == (503, true)
    })
    .await;
    for addr in &e[..3] {
        let addr = *addr;
        until(addr, "ready by the fleet's rule", async || {
            ready(addr).await == (200, "fleet".into())
        })
        .await;
    }
    let (_, verbose) = common::request(e[0], "GET", "/healthcheck/ready?verbose", None, "").await;
    assert!(
        verbose.contains("below the readiness fail-open share (30 %)"),
        "{verbose}"
    );
    // dc-2 is untouched throughout.
    assert_eq!(get(e[3], "/fleet/datacenters/dc-2").await.0, 200);

    // Recovery: healthy again, each instance ready by its own rule.
    for addr in &e[..3] {
        outage(*addr, "ok").await;
    }
    until(e[3], "dc-1 healthy again", async || {
        dc1(e[3]).await == (200, false)
    })
    .await;
    for addr in &e[..3] {
        let addr = *addr;
        until(addr, "ready by its own rule", async || {
            ready(addr).await == (200, "instance".into())
        })
        .await;
    }
}

#[test]
fn a_policy_whose_thresholds_cross_is_refused_at_start() {
    let output = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .args(["--port", &free_port().to_string()])
        .args([
            "--fleet-redis",
            "redis://127.0.0.1:1/",
            "--datacenter",
            "dc-1",
        ])
        .args([
            "--fleet-healthy-share",
            "0.2",
            "--ready-fail-open-share",
            "0.3",
        ])
        .env("STATUS_ADMIN_TOKEN", "t")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("must be at or below the healthy share"),
        "{stderr}"
    );
}
