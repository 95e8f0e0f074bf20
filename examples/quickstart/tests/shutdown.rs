//! The quickstart binary on SIGTERM: readiness fails first, liveness holds, then it exits.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_fails_readiness_then_stops() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut child = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .args([
            "--port",
            &port.to_string(),
            "--period-ms",
            "100",
            "--shutdown-delay-ms",
            "1500",
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

    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::Term).unwrap();

    // During the delay: not ready, summary failing, still alive and serving.
    let deadline = Instant::now() + Duration::from_secs(5);
    while common::request(addr, "GET", "/healthcheck/ready", None, "")
        .await
        .0
        != 503
    {
        assert!(Instant::now() < deadline, "readiness never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (live, _) = common::request(addr, "GET", "/healthcheck/live", None, "").await;
    assert_eq!(live, 200);
    let (summary, body) = common::request(addr, "GET", "/healthcheck/summary", None, "").await;
    assert_eq!(summary, 503);
    assert!(body.contains("shutting down"), "{body}");

    // Then it stops, cleanly.
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "the quickstart did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "{exit:?}");
}
