//! Processes for the tests that run several: free ports, a child killed when dropped, a
//! `redis-server` (installed by `scripts/test`), and quickstarts.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

#[path = "../../../../../status-checks/tests/components/listener.rs"]
mod listener;
#[allow(unused_imports)] // Not every test binary uses both.
pub(crate) use listener::{free_port, on_a_free_port};

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

/// The quickstart binary on `port`, checked every 100 ms, admin token `t`, warnings only, its
/// output dropped; more arguments are the caller's.
#[allow(dead_code)] // Not every test binary starts quickstarts.
pub(crate) fn quickstart_on(port: u16) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quickstart"));
    command
        .args(["--port", &port.to_string(), "--period-ms", "100"])
        .env("STATUS_ADMIN_TOKEN", "t")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// A quickstart on a free port with `args` (checked every 100 ms, admin token `t`, warnings
/// only), once it answers ready.
#[allow(dead_code)] // Not every test binary starts quickstarts this way.
pub(crate) async fn quickstart(args: &[&str]) -> (Process, SocketAddr) {
    quickstart_env(args, &[]).await
}

/// [`quickstart`], with `envs` in its environment.
#[allow(dead_code)] // Not every test binary starts quickstarts this way.
pub(crate) async fn quickstart_env(args: &[&str], envs: &[(&str, &str)]) -> (Process, SocketAddr) {
    let (child, port) = on_a_free_port("the quickstart", |port| {
        let mut command = quickstart_on(port);
        command.args(args).envs(envs.iter().copied());
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
