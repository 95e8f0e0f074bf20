//! Processes for the tests that run several: free ports, a child killed when dropped, a
//! `redis-server` (installed by `scripts/test`), and quickstarts.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};

#[path = "../../../../status-checks/tests/components/listener.rs"]
mod listener;

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts what `command` makes of a free port, once the listener on that port is its own:
/// the child and the port. Another test's server may take a port between its choice and the
/// bind; the child then exits and is started again on another.
pub(crate) fn on_a_free_port(what: &str, command: impl Fn(u16) -> Command) -> (Child, u16) {
    for _ in 0..10 {
        let port = free_port();
        let mut child = command(port)
            .spawn()
            .unwrap_or_else(|e| panic!("{what} starts: {e}"));
        if listener::wait_until_held(&mut child, &[port], what) {
            return (child, port);
        }
        child.kill().ok();
        child.wait().ok();
    }
    panic!("{what} found no free port in ten tries");
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
    let (child, port) = on_a_free_port("redis-server", |port| {
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    });
    (Process(child), port)
}

/// A quickstart on a free port with `args` (checked every 100 ms, admin token `t`, warnings
/// only), once it answers ready.
#[allow(dead_code)] // Not every test binary starts quickstarts this way.
pub(crate) async fn quickstart(args: &[&str]) -> (Process, SocketAddr) {
    let (child, port) = on_a_free_port("the quickstart", |port| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quickstart"));
        command
            .args(["--port", &port.to_string(), "--period-ms", "100"])
            .args(args)
            .env("STATUS_ADMIN_TOKEN", "t")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        command
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    crate::common::until(addr, "ready", async || {
        tokio::net::TcpStream::connect(addr).await.is_ok()
            && crate::common::get_json(addr, "/healthcheck/ready").await.0 == 200
    })
    .await;
    (Process(child), addr)
}
