//! "Mine or shared" on real processes: ten quickstarts in one data center on one real
//! `redis-server`, publishing to the fleet and culling through a budget in the same Redis.
//! A failure of one instance's own, with failing traffic, culls it; the same failure on all
//! of them (a shared dependency down) culls no one: the culler attributes the failures to the
//! data center and never asks the budget, which would have let them all go.

use std::net::SocketAddr;

use crate::common;

use crate::common::{chaos, get_json as get, until};
use crate::processes::{quickstart, redis_server, Process};

async fn instance(redis: u16, id: usize) -> (Process, SocketAddr) {
    let redis_url = format!("redis://127.0.0.1:{redis}/");
    let id = format!("i{id}");
    quickstart(&[
        "--fleet-redis",
        &redis_url,
        "--datacenter",
        "dc-1",
        "--instance-id",
        &id,
        "--fleet-ttl-ms",
        "600",
        "--cull-redis",
        &redis_url,
        "--cull-threshold",
        "5",
        "--cull-interval-ms",
        "300",
        "--cull-window-s",
        "60",
        // A budget that would let every instance go: only the attribution saves them.
        "--cull-capacity",
        "20",
        "--cull-budget-window-s",
        "600",
        "--cull-budget",
        "sliding",
        "--cull-min-uptime-s",
        "0",
        // A new Redis: it forgot nothing (without this, its first window counts as spent).
        "--cull-vouch",
    ])
    .await
}

/// Failing traffic: ten requests to `/demo/work` that fail, over the culler's threshold.
async fn failing_traffic(addr: SocketAddr) {
    for _ in 0..10 {
        let (status, _) = get(addr, "/demo/work?ms=0&fail=true").await;
        assert_eq!(status, 500);
    }
}

/// `primary-db` as `addr` sees it across dc-1: the instances failing it at OUTAGE, and
/// whether it is shared.
async fn seen(addr: SocketAddr) -> (u64, bool) {
    let (_, body) = get(addr, "/fleet/dependencies").await;
    body["dependencies"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|row| row["dependency"] == "primary-db" && row["level"] == "OUTAGE")
        .map_or((0, false), |row| {
            (row["instances"].as_u64().unwrap(), row["shared"] == true)
        })
}

async fn live(addr: SocketAddr) -> u16 {
    get(addr, "/healthcheck/live").await.0
}

async fn culler_says(addr: SocketAddr) -> String {
    let (_, body) = get(addr, "/healthcheck/dependencies/culler").await;
    body["errorMessage"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_outage_culls_no_one_and_a_lone_one_is_culled() {
    let (_redis, redis_port) = redis_server();
    let mut fleet = Vec::new();
    for id in 0..10 {
        fleet.push(instance(redis_port, id).await);
    }
    let addrs: Vec<SocketAddr> = fleet.iter().map(|(_, a)| *a).collect();
    until(addrs[0], "ten fresh instances", async || {
        get(addrs[0], "/fleet/datacenters/dc-1").await.1["fresh"] == 10
    })
    .await;

    // One instance's own failure, with failing traffic: it is culled (its own, not shared).
    let lone = addrs[0];
    chaos(lone, "primary-db", "outage").await;
    until(lone, "its failure published", async || {
        seen(addrs[1]).await == (1, false)
    })
    .await;
    failing_traffic(lone).await;
    until(lone, "culled", async || live(lone).await == 503).await;

    // The same failure on the nine others: shared (10 of 10 in dc-1), and the culler of each
    // sees it before the traffic fails.
    for addr in &addrs[1..] {
        chaos(*addr, "primary-db", "outage").await;
    }
    for addr in &addrs[1..] {
        let addr = *addr;
        until(addr, "primary-db shared", async || {
            seen(addr).await == (10, true)
        })
        .await;
    }
    // Since when, as this instance has seen it (RFC 3339, UTC), for the operator.
    let (_, rows) = get(addrs[1], "/fleet/dependencies").await;
    let since = rows["dependencies"][0]["since"]
        .as_str()
        .unwrap_or_default();
    assert!(
        since.len() == 20 && since.ends_with('Z') && since.contains('T'),
        "{rows}"
    );
    for addr in &addrs[1..] {
        failing_traffic(*addr).await;
    }
    // Every culler looks several times over its threshold (every 300 ms ± 20 %): not one
    // culls, and each says why.
    for addr in &addrs[1..] {
        let addr = *addr;
        until(addr, "the culler says the failure is shared", async || {
            culler_says(addr)
                .await
                .contains("not culling, the failure is shared: primary-db OUTAGE")
        })
        .await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    for addr in &addrs[1..] {
        assert_eq!(live(*addr).await, 200, "{addr} culled for a shared failure");
        let says = culler_says(*addr).await;
        assert!(says.contains("the failure is shared"), "{addr}: {says}");
    }
    let (_, metrics) = common::request(addrs[1], "GET", "/metrics", None, "").await;
    assert!(metrics.contains("status_cull_culled 0"), "{metrics}");
}
