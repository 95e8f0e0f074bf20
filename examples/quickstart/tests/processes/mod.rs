//! Processes for the tests that run several: free ports, a child killed when dropped, a
//! `redis-server` (installed by `scripts/test`), and quickstarts.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A process killed when dropped.
pub(crate) struct Process(pub(crate) Child);

impl Drop for Process {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// A `redis-server` without persistence on a free port, accepting connections, and the port.
pub(crate) fn redis_server() -> (Process, u16) {
    let port = free_port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server is installed (scripts/test installs it)");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "redis-server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    (Process(child), port)
}

/// A quickstart on a free port with `args` (checked every 100 ms, admin token `t`, warnings
/// only), once it answers ready.
#[allow(dead_code)] // Not every test binary starts quickstarts this way.
pub(crate) async fn quickstart(args: &[&str]) -> (Process, SocketAddr) {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .args(["--port", &port.to_string(), "--period-ms", "100"])
        .args(args)
        .env("STATUS_ADMIN_TOKEN", "t")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    crate::common::until(addr, "ready", async || {
        tokio::net::TcpStream::connect(addr).await.is_ok()
            && crate::common::get_json(addr, "/healthcheck/ready").await.0 == 200
    })
    .await;
    (Process(child), addr)
}
