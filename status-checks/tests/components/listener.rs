//! Whose is the listener on a loopback port. A test picks a free port and starts its server
//! on it; another test's server may take that port in between. Ours then exits (`Address
//! already in use`), and the port answers all the same: the test would use, and lose, a
//! server another test stops. So a server started for a test waits until the listener on its
//! port is its own, read from `/proc` (Linux, as the tests run).
// Shared by several test binaries, each using what it needs of it.
#![allow(dead_code)]

use std::collections::HashSet;
use std::net::TcpListener;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A port free on loopback now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts what `command` makes of a free port, once the listener on that port is its own:
/// the child and the port. When another process took the port first, the child exits and is
/// started again on another.
pub(crate) fn on_a_free_port(what: &str, command: impl Fn(u16) -> Command) -> (Child, u16) {
    for _ in 0..10 {
        let port = free_port();
        let mut child = command(port)
            .spawn()
            .unwrap_or_else(|e| panic!("{what} starts: {e}"));
        if wait_until_held(&mut child, &[port], what) {
            return (child, port);
        }
        child.kill().ok();
        child.wait().ok();
    }
    panic!("{what} found no free port in ten tries");
}

/// Whether process `pid`, or a process of the group `pid` leads (a server started by a
/// script, in a group of its own), holds every socket listening on `port`, IPv4 and IPv6:
/// `Some(true)`; `Some(false)` when it holds some and another process the others (a server
/// that bound `::1` with `127.0.0.1` taken); `None` when it holds none yet.
pub(crate) fn held_by(pid: u32, port: u16) -> Option<bool> {
    let sockets = listening(port);
    if sockets.is_empty() {
        return None;
    }
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return None;
    };
    let mut ours = HashSet::new();
    for process in processes.flatten() {
        let Some(other) = process.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if other != pid && group(other) != Some(pid) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if let Some(inode) = link
                .to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
                .filter(|inode| sockets.contains(*inode))
            {
                ours.insert(inode.to_owned());
            }
        }
    }
    (!ours.is_empty()).then_some(ours.len() == sockets.len())
}

/// Waits until `child` (or its group) holds every listener on each of `ports`: true; false
/// when it exits first (its port was taken) or shares a port with another process. Panics
/// past 20 s, naming `what`.
pub(crate) fn wait_until_held(child: &mut Child, ports: &[u16], what: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let held: Vec<Option<bool>> = ports.iter().map(|&p| held_by(child.id(), p)).collect();
        if held.contains(&Some(false)) {
            return false;
        }
        if held.iter().all(|h| *h == Some(true)) {
            return true;
        }
        if !matches!(child.try_wait(), Ok(None)) {
            return false;
        }
        assert!(
            Instant::now() < deadline,
            "{what} did not start on ports {ports:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The inodes of the sockets listening on `port`.
fn listening(port: u16) -> HashSet<String> {
    let suffix = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    // local address, state (0A: listening), inode.
                    (fields.len() > 9 && fields[1].ends_with(&suffix) && fields[3] == "0A")
                        .then(|| fields[9].to_owned())
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The process group of process `pid`.
fn group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state, parent, group.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}
