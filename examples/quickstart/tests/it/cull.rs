//! Culling across a fleet: several quickstart processes share one real `redis-server` (both
//! installed by `scripts/test`); errors injected into all of them cull exactly the budget's
//! capacity, the others keep serving, and a request in flight on a culled instance completes.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use crate::common;

use crate::processes::{on_a_free_port, quickstart_on, redis_server, Process};

async fn wait_for(addr: SocketAddr, path: &str, status: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if tokio::net::TcpStream::connect(addr).await.is_ok()
            && common::request(addr, "GET", path, None, "").await.0 == status
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{addr}{path} never answered {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn instance(redis_port: u16, id: usize) -> (Process, SocketAddr) {
    let (child, port) = on_a_free_port("the quickstart", |port| {
        let mut command = quickstart_on(port);
        command
            .args(["--cull-redis", &format!("redis://127.0.0.1:{redis_port}/")])
            .args(["--cull-threshold", "5", "--cull-interval-ms", "300"])
            // Sliding: a fixed window would let two windows' worth through if the test ran
            // across an edge of the calendar's ten-minute windows.
            .args(["--cull-capacity", "2", "--cull-budget-window-s", "600"])
            .args(["--cull-budget", "sliding"])
            // A new Redis: it forgot nothing (without this, its first window counts as spent).
            .arg("--cull-vouch")
            .args([
                "--cull-min-uptime-s",
                "0",
                "--instance-id",
                &format!("instance-{id}"),
            ]);
        command
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_for(addr, "/healthcheck/ready", 200).await;
    (Process(child), addr)
}

async fn live(addr: SocketAddr) -> u16 {
    common::request(addr, "GET", "/healthcheck/live", None, "")
        .await
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_wide_failure_culls_only_the_budgets_capacity() {
    let (_redis, redis_port) = redis_server();
    let mut fleet = Vec::new();
    for id in 0..5 {
        fleet.push(instance(redis_port, id).await);
    }
    // A slow request in flight on every instance, through the culls (under the 2 s deadline).
    let in_flight: Vec<_> = fleet
        .iter()
        .map(|(_, addr)| {
            let addr = *addr;
            tokio::spawn(async move {
                common::request(addr, "GET", "/demo/work?ms=1500", None, "")
                    .await
                    .0
            })
        })
        .collect();
    // The same failure everywhere: ten 500s each, over the threshold of five.
    for (_, addr) in &fleet {
        for _ in 0..10 {
            let (status, _) =
                common::request(*addr, "GET", "/demo/work?ms=1&fail=true", None, "").await;
            assert_eq!(status, 500);
        }
    }
    // Every culler looks within 0.4 s; give them five looks.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut culled = Vec::new();
    for (_, addr) in &fleet {
        culled.push(live(*addr).await == 503);
    }
    assert_eq!(culled.iter().filter(|c| **c).count(), 2, "{culled:?}");
    for ((_, addr), culled) in fleet.iter().zip(&culled) {
        let (ready, _) = common::request(*addr, "GET", "/healthcheck/ready", None, "").await;
        let (work, _) = common::request(*addr, "GET", "/demo/work?ms=1", None, "").await;
        let (_, metrics) = common::request(*addr, "GET", "/metrics", None, "").await;
        if *culled {
            assert_eq!(ready, 503);
            assert!(metrics.contains("status_cull_culled 1"), "{metrics}");
        } else {
            assert_eq!(ready, 200, "the others keep serving");
            assert!(metrics.contains("status_cull_culled 0"), "{metrics}");
            assert!(
                !metrics.contains(r#"status_cull_denied_total{reason="spent"} 0"#),
                "{metrics}"
            );
        }
        assert_eq!(work, 200, "requests are still served");
    }
    // And the requests in flight all completed, on the culled instances too.
    for request in in_flight {
        assert_eq!(request.await.unwrap(), 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_culled_instance_can_exit_on_its_own() {
    let (mut child, port) = on_a_free_port("the quickstart", |port| {
        let mut command = quickstart_on(port);
        command
            .args(["--cull-threshold", "3", "--cull-interval-ms", "200"])
            .args(["--cull-min-uptime-s", "0", "--cull-exit-after-ms", "300"]);
        command
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    wait_for(addr, "/healthcheck/ready", 200).await;
    for _ in 0..3 {
        common::request(addr, "GET", "/demo/work?ms=1&fail=true", None, "").await;
    }
    wait_for(addr, "/healthcheck/live", 503).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after its cull");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}");
}
