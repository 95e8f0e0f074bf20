//! The built example, black-box: both servers answer probes from one composition, and one
//! SIGTERM fails readiness on both at once, keeps liveness on both through the delay, then
//! stops both; the process exits 0 within the delay and the grace.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use status_grpc::pb::health_client::HealthClient;
use status_grpc::pb::HealthCheckRequest;
use status_grpc::ServingStatus;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status code of a GET of `path`, or `None` when nothing answers.
async fn http_status(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.ok()?;
    let text = String::from_utf8_lossy(&answer);
    text.split(' ').nth(1)?.parse().ok()
}

async fn grpc_status(
    client: &mut HealthClient<status_grpc::tonic::transport::Channel>,
    service: &str,
) -> Option<ServingStatus> {
    let request = HealthCheckRequest {
        service: service.as_bytes().to_vec(),
    };
    Some(client.check(request).await.ok()?.into_inner().status())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sigterm_stops_both_servers_readiness_first() {
    let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let grpc = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_axum-tonic"))
        .args(["--http", &http.to_string(), "--grpc", &grpc.to_string()])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while http_status(http, "/healthcheck/ready").await != Some(200) {
        assert!(Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = HealthClient::connect(format!("http://{grpc}"))
        .await
        .unwrap();
    assert_eq!(
        grpc_status(&mut client, "probe/ready").await,
        Some(ServingStatus::Serving)
    );
    assert_eq!(http_status(http, "/hello").await, Some(200));

    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::Term).unwrap();
    let signalled = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The delay: readiness fails on both, liveness holds on both, both still answer.
    assert_eq!(http_status(http, "/healthcheck/ready").await, Some(503));
    assert_eq!(http_status(http, "/healthcheck/live").await, Some(200));
    assert_eq!(
        grpc_status(&mut client, "probe/ready").await,
        Some(ServingStatus::NotServing)
    );
    assert_eq!(
        grpc_status(&mut client, "probe/live").await,
        Some(ServingStatus::Serving)
    );
    // Then both stop, and the process exits 0 within the delay (2 s) and the grace (3 s).
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() >= Duration::from_secs(2),
        "the delay was kept"
    );
    assert_eq!(
        http_status(http, "/healthcheck/live").await,
        None,
        "HTTP stopped"
    );
    assert!(TcpStream::connect(grpc).await.is_err(), "gRPC stopped");
}
