//! The quickstart binary on SIGTERM: readiness fails first, liveness holds, then it exits.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

mod common;

/// Starts the quickstart binary on a free port with `shutdown_delay_ms`; waits until ready.
async fn start(shutdown_delay_ms: u64) -> (std::process::Child, SocketAddr) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let child = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .args([
            "--port",
            &port.to_string(),
            "--period-ms",
            "100",
            "--shutdown-delay-ms",
            &shutdown_delay_ms.to_string(),
        ])
        .env("STATUS_ADMIN_TOKEN", "t")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(stream) = tokio::net::TcpStream::connect(addr).await {
            drop(stream);
            if common::request(addr, "GET", "/healthcheck/ready", None, "")
                .await
                .0
                == 200
            {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the quickstart never became ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (child, addr)
}

fn terminate(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::Term).unwrap();
}

/// Waits for `child` to exit; its exit status.
async fn exit_of(mut child: std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(exit) = child.try_wait().unwrap() {
            return exit;
        }
        assert!(Instant::now() < deadline, "the quickstart did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until readiness answers 503.
async fn until_not_ready(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while common::request(addr, "GET", "/healthcheck/ready", None, "")
        .await
        .0
        != 503
    {
        assert!(Instant::now() < deadline, "readiness never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_fails_readiness_then_stops() {
    let (child, addr) = start(1500).await;
    terminate(&child);

    // During the delay: not ready, summary failing, still alive and serving.
    until_not_ready(addr).await;
    let (live, _) = common::request(addr, "GET", "/healthcheck/live", None, "").await;
    assert_eq!(live, 200);
    let (summary, body) = common::request(addr, "GET", "/healthcheck/summary", None, "").await;
    assert_eq!(summary, 503);
    assert!(body.contains("shutting down"), "{body}");

    // Then it stops, cleanly.
    let exit = exit_of(child).await;
    assert!(exit.success(), "{exit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_cannot_put_a_stopping_instance_back_in_rotation() {
    let (child, addr) = start(4000).await;
    terminate(&child);
    until_not_ready(addr).await;

    // A short operator drain, then an undrain: the shutdown's hold stays.
    let (code, body) = common::request(
        addr,
        "PUT",
        "/admin/drain",
        Some("t"),
        r#"{"ttlSeconds": 1, "reason": "quick look"}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(r#""source":"shutdown""#), "{body}");
    let (code, body) = common::request(addr, "DELETE", "/admin/drain", Some("t"), "").await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(r#""draining":true"#), "{body}");
    let (ready, body) = common::request(addr, "GET", "/healthcheck/ready", None, "").await;
    assert_eq!(ready, 503, "{body}");
    assert!(body.contains("shutting down"), "{body}");

    // Past the operator's 1 s, still out of rotation.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (ready, _) = common::request(addr, "GET", "/healthcheck/ready", None, "").await;
    assert_eq!(ready, 503);
    let (summary, _) = common::request(addr, "GET", "/healthcheck/summary", None, "").await;
    assert_eq!(summary, 503);

    let exit = exit_of(child).await;
    assert!(exit.success(), "{exit:?}");
}
