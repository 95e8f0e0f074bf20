//! The quickstart's fleet and cull budget in a real etcd (`--fleet-etcd`, `--cull-etcd`):
//! two processes in two data centers share one etcd member; a prefix that holds something
//! else stops the start with a clear error.

use std::net::SocketAddr;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common;

use crate::etcd_server::EtcdCluster;
use crate::processes::{free_port, on_a_free_port, Process};

use crate::common::{get_json as get, until};

fn quickstart(etcd: &str, id: &str, dc: &str, port: u16) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quickstart"));
    command
        .args(["--port", &port.to_string(), "--period-ms", "100"])
        .args(["--fleet-etcd", etcd, "--cull-etcd", etcd])
        .args([
            "--datacenter",
            dc,
            "--instance-id",
            id,
            "--fleet-ttl-ms",
            "2000",
        ])
        .env("STATUS_ADMIN_TOKEN", "t")
        .env("RUST_LOG", "warn");
    command
}

async fn instance(etcd: &str, id: &str, dc: &str) -> (Process, SocketAddr) {
    let (child, port) = on_a_free_port("the quickstart", |port| {
        let mut command = quickstart(etcd, id, dc, port);
        command.stdout(Stdio::null()).stderr(Stdio::null());
        command
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    until(addr, "ready", async || {
        tokio::net::TcpStream::connect(addr).await.is_ok()
            && get(addr, "/healthcheck/ready").await.0 == 200
    })
    .await;
    (Process(child), addr)
}

/// The object with `"id": id` anywhere in `value`.
fn find<'a>(value: &'a Value, id: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) if map.get("id").and_then(Value::as_str) == Some(id) => Some(value),
        Value::Object(map) => map.values().find_map(|v| find(v, id)),
        Value::Array(items) => items.iter().find_map(|v| find(v, id)),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_data_centers_share_an_etcd_and_one_fails() {
    let etcd = EtcdCluster::start(1);
    let urls = etcd.urls();
    let (_east, east) = instance(&urls, "e1", "east").await;
    let (_west, west) = instance(&urls, "w1", "west").await;
    until(west, "both data centers in the view", async || {
        let (status, body) = get(west, "/fleet").await;
        status == 200
            && body["stale"] == false
            && body["datacenters"].as_array().is_some_and(|d| d.len() == 2)
    })
    .await;
    assert_eq!(get(west, "/fleet/datacenters/east").await.0, 200);

    // East's only instance fails: east is unhealthy, west is not, nobody fails open.
    let (status, body) = common::request(
        east,
        "PUT",
        "/demo/chaos/primary-db",
        Some("t"),
        r#"{"mode":"outage"}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    until(west, "east unhealthy", async || {
        get(west, "/fleet/datacenters/east").await.0 == 503
    })
    .await;
    let (status, body) = get(east, "/fleet/datacenters/west").await;
    assert_eq!((status, body["failOpen"].as_bool()), (200, Some(false)));

    // The instances, listed from etcd.
    let (status, body) = get(west, "/fleet?datacenter=east").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["instances"][0]["instanceId"], "e1", "{body}");

    // The fleet's store is a passive dependency, OK while etcd answers the beats; its message
    // says what the last beat found.
    until(
        west,
        "the fleet dependency counts two data centers",
        async || {
            let (_, report) = get(west, "/healthcheck").await;
            find(&report, "fleet").is_some_and(|fleet| {
                fleet["status"] == "OK"
                    && fleet["errorMessage"]
                        .as_str()
                        .unwrap_or_default()
                        .contains("2 data centers")
            })
        },
    )
    .await;
}

#[test]
fn a_prefix_that_holds_something_else_stops_the_start_with_a_clear_error() {
    let etcd = EtcdCluster::start(1);
    etcd.ctl(&["put", "status:quickstart:fleet/config", "someone else's"])
        .unwrap();
    let out = quickstart(&etcd.urls(), "e1", "east", free_port())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("holds something else"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
