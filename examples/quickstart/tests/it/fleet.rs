//! The fleet view across processes: four quickstarts in two data centers share one real
//! `redis-server`; the chaos API breaks a data center, then both.

use std::net::SocketAddr;

use crate::agree;
use crate::common;

use crate::processes::{free_port, redis_server, Process};

use crate::common::{get_json as get, until};

async fn instance(redis: u16, id: &str, dc: &str) -> (Process, SocketAddr) {
    instance_with(redis, id, dc, &[]).await
}

async fn instance_with(redis: u16, id: &str, dc: &str, extra: &[&str]) -> (Process, SocketAddr) {
    instance_env(redis, id, dc, extra, &[]).await
}

/// [`instance_with`], with `envs` in its environment.
async fn instance_env(
    redis: u16,
    id: &str,
    dc: &str,
    extra: &[&str],
    envs: &[(&str, &str)],
) -> (Process, SocketAddr) {
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
    args.extend(extra);
    crate::processes::quickstart_env(&args, envs).await
}

async fn chaos(addr: SocketAddr, mode: &str) {
    common::chaos(addr, "primary-db", mode).await;
}

/// The data-center endpoint `dc` as `addr` answers it: code and `failOpen`.
async fn dc(addr: SocketAddr, dc: &str) -> (u16, bool) {
    let (status, body) = get(addr, &format!("/fleet/datacenters/{dc}")).await;
    (status, body["failOpen"].as_bool().unwrap_or(false))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datacenter_fails_then_both_fail_open_then_recover() {
    let (_redis, redis_port) = redis_server();
    let east = [
        instance(redis_port, "e1", "east").await,
        instance(redis_port, "e2", "east").await,
    ];
    let west = [
        instance(redis_port, "w1", "west").await,
        instance(redis_port, "w2", "west").await,
    ];
    let asker = east[0].1;
    until(asker, "both healthy", async || {
        dc(asker, "east").await == (200, false) && dc(asker, "west").await == (200, false)
    })
    .await;
    let (_, fleet) = get(asker, "/fleet").await;
    assert_eq!(fleet["datacenters"].as_array().unwrap().len(), 2, "{fleet}");

    for (_, addr) in &west {
        chaos(*addr, "outage").await;
    }
    until(asker, "west out", async || {
        dc(asker, "west").await == (503, false)
    })
    .await;
    assert_eq!(dc(asker, "east").await, (200, false));
    let (_, page) = common::request(asker, "GET", "/status/fleet", None, "").await;
    assert!(
        page.contains(r#"id="dc-west" data-healthy="false""#),
        "{page}"
    );
    assert!(page.contains(r#"data-instance="w2""#), "{page}");
    // Any instance answers the same, the west ones included.
    until(west[0].1, "west sees itself out", async || {
        dc(west[0].1, "west").await.0 == 503
    })
    .await;

    for (_, addr) in &east {
        chaos(*addr, "outage").await;
    }
    until(asker, "failing open", async || {
        dc(asker, "east").await == (200, true) && dc(asker, "west").await == (200, true)
    })
    .await;

    for (_, addr) in east.iter().chain(&west) {
        chaos(*addr, "ok").await;
    }
    until(asker, "recovered", async || {
        dc(asker, "east").await == (200, false) && dc(asker, "west").await == (200, false)
    })
    .await;
    let (status, _) = get(asker, "/fleet/datacenters/north").await;
    assert_eq!(status, 404);
    let (_, metrics) = common::request(asker, "GET", "/metrics", None, "").await;
    assert!(
        metrics.contains(r#"status_fleet_datacenter_healthy{dc="west"} 1"#),
        "{metrics}"
    );
    // The store is said: beats timed, nothing refused, and a dependency.
    assert!(
        metrics.contains("status_fleet_exchange_seconds_count"),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"status_fleet_rejected_total{reason="wrong_type"} 0"#),
        "{metrics}"
    );
    let (_, fleet_dependency) = get(asker, "/healthcheck/dependencies/fleet").await;
    assert_eq!(fleet_dependency["status"], "OK", "{fleet_dependency}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_aware_readiness_leaves_a_shared_failure_to_the_datacenter() {
    let (_redis, redis_port) = redis_server();
    let aware = ["--fleet-aware-readiness"];
    let grpc_port = free_port().to_string();
    // e1 exports over OTLP too, every 200 ms, to be asked the same questions there.
    let collector = crate::collector::Collector::start().await;
    let endpoint = collector.endpoint();
    let otlp = agree::otlp_env(&endpoint);
    let mut east = Vec::new();
    for id in ["e1", "e2", "e3"] {
        // e1 answers gRPC too, to be asked the same questions both ways.
        east.push(if id == "e1" {
            let args = ["--fleet-aware-readiness", "--grpc-port", &grpc_port];
            instance_env(redis_port, id, "east", &args, &otlp).await
        } else {
            instance_with(redis_port, id, "east", &aware).await
        });
    }
    let _west = instance_with(redis_port, "w1", "west", &aware).await;
    let asker = east[0].1;
    until(asker, "both healthy", async || {
        dc(asker, "east").await == (200, false) && dc(asker, "west").await == (200, false)
    })
    .await;
    // Its own failure takes one instance out, by the instance's rule.
    chaos(east[1].1, "outage").await;
    let e2 = east[1].1;
    until(e2, "e2 not ready", async || {
        get(e2, "/healthcheck/ready").await.0 == 503
    })
    .await;
    assert_eq!(get(e2, "/healthcheck/ready").await.1["rule"], "instance");
    // The same failure on every instance of east: they stay ready, east's endpoint says 503.
    for (_, addr) in &east {
        chaos(*addr, "outage").await;
    }
    until(asker, "east out", async || {
        dc(asker, "east").await == (503, false)
    })
    .await;
    for (_, addr) in &east {
        let addr = *addr;
        until(addr, "ready by the fleet's rule", async || {
            let (status, body) = get(addr, "/healthcheck/ready").await;
            status == 200 && body["rule"] == "fleet"
        })
        .await;
    }
    // gRPC renders the same verdict: `probe/ready` is SERVING by the fleet's rule, and every
    // other service agrees with its route.
    let mut client = agree::grpc_client(grpc_port.parse().unwrap()).await;
    let services = agree::services(&mut client).await;
    let mut found = agree::disagreements(asker, &mut client, &services, "shared outage").await;
    let groups = agree::groups(&services);
    found.extend(agree::otlp_disagreements(asker, &collector, &groups, "shared outage").await);
    assert!(found.is_empty(), "{found:#?}");
    let ready = agree::check(&mut client, "probe/ready").await;
    assert_eq!(ready, status_grpc::ServingStatus::Serving);
}
