//! Whose is the listener on a loopback port. A test picks a free port and starts its server
//! on it; another test's server may take that port in between. Ours then exits (`Address
//! already in use`), and the port answers all the same: the test would use, and lose, a
//! server another test stops. So a server started for a test waits until the listener on its
//! port is its own, read from `/proc` (Linux, as the tests run).

use std::collections::HashSet;
use std::process::Child;
use std::time::{Duration, Instant};

/// Whether the socket listening on `port` (IPv4 or IPv6) is held by process `pid` or by a
/// process of the group `pid` leads (a server started by a script, in a group of its own).
pub(crate) fn held_by(pid: u32, port: u16) -> bool {
    let sockets = listening(port);
    if sockets.is_empty() {
        return false;
    }
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return false;
    };
    processes.flatten().any(|process| {
        let Some(other) = process.file_name().to_str().and_then(|n| n.parse().ok()) else {
            return false;
        };
        if other != pid && group(other) != Some(pid) {
            return false;
        }
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|link| {
                link.to_str()
                    .and_then(|l| l.strip_prefix("socket:["))
                    .and_then(|l| l.strip_suffix(']'))
                    .is_some_and(|inode| sockets.contains(inode))
            })
        })
    })
}

/// Waits until `child` (or its group) listens on each of `ports`: true; false when it exits
/// first (its port was taken). Panics past 20 s, naming `what`.
pub(crate) fn wait_until_held(child: &mut Child, ports: &[u16], what: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if ports.iter().all(|&port| held_by(child.id(), port)) {
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
