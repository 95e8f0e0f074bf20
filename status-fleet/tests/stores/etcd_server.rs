//! Real etcd members for the tests (Debian's `etcd-server`, installed by `scripts/test`): one
//! member, or a cluster of three, on free loopback ports with their data in a temporary
//! directory; stopped and removed when dropped. Shared by status-core's and status-traffic's
//! tests (`#[path]`), each using what it needs of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// Also loaded by `servers.rs`, which some of the binaries that load this one load too.
#[allow(clippy::duplicate_mod)]
#[path = "../../../status-checks/tests/components/listener.rs"]
mod listener;
use listener::{free_port, wait_until_held};

static CLUSTERS: AtomicUsize = AtomicUsize::new(0);

/// An etcd cluster of one or more members.
pub(crate) struct EtcdCluster {
    client_ports: Vec<u16>,
    peer_ports: Vec<u16>,
    children: Vec<Option<Child>>,
    dir: PathBuf,
    token: String,
}

impl EtcdCluster {
    /// `members` members, started, with a leader elected.
    pub(crate) fn start(members: usize) -> Self {
        let n = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("status-etcd-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut cluster = Self {
            client_ports: Vec::new(),
            peer_ports: Vec::new(),
            children: (0..members).map(|_| None).collect(),
            dir,
            token: String::new(),
        };
        // Another try, on other ports, when another process took one before its member
        // listened on it (each member names the others' peer ports: all start again).
        for attempt in 0..10 {
            cluster.client_ports = (0..members).map(|_| free_port()).collect();
            cluster.peer_ports = (0..members).map(|_| free_port()).collect();
            cluster.token = format!("status-{}-{n}-{attempt}", std::process::id());
            if (0..members).all(|i| cluster.start_member(i)) {
                cluster.wait_healthy();
                return cluster;
            }
            cluster.stop_all();
            for i in 0..members {
                let _ = std::fs::remove_dir_all(cluster.dir.join(format!("m{i}")));
            }
        }
        panic!("etcd found no free ports in ten tries");
    }

    /// Starts member `i` on its ports: whether they are its own.
    fn start_member(&mut self, i: usize) -> bool {
        let program = ["/usr/bin/etcd", "/usr/local/bin/etcd"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .unwrap_or("etcd");
        let initial: Vec<String> = self
            .peer_ports
            .iter()
            .enumerate()
            .map(|(j, p)| format!("m{j}=http://127.0.0.1:{p}"))
            .collect();
        let client = format!("http://127.0.0.1:{}", self.client_ports[i]);
        let peer = format!("http://127.0.0.1:{}", self.peer_ports[i]);
        let log = std::fs::File::create(self.dir.join(format!("m{i}.log"))).unwrap();
        let mut child = Command::new(program)
            .args(["--name", &format!("m{i}")])
            .arg("--data-dir")
            .arg(self.dir.join(format!("m{i}")))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &initial.join(",")])
            .args(["--initial-cluster-token", &self.token])
            .args(["--initial-cluster-state", "new"])
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("etcd is installed (scripts/test installs etcd-server)");
        let ports = [self.client_ports[i], self.peer_ports[i]];
        let held = wait_until_held(&mut child, &ports, &format!("etcd member {i}"));
        self.children[i] = Some(child);
        held
    }

    /// Every running member answers, with a leader.
    pub(crate) fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for (i, port) in self.client_ports.iter().enumerate() {
            if self.children[i].is_none() {
                continue;
            }
            loop {
                // `endpoint health` commits a proposal: a member with a leader.
                if etcdctl(&format!("http://127.0.0.1:{port}"), &["endpoint", "health"]).is_some() {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "etcd member {i} never became healthy"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Every member's client URL, separated by commas.
    pub(crate) fn urls(&self) -> String {
        (0..self.client_ports.len())
            .map(|i| self.url(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Member `i`'s client URL.
    pub(crate) fn url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.client_ports[i])
    }

    /// The member that leads now, if any running member knows one.
    pub(crate) fn leader(&self) -> Option<usize> {
        for i in 0..self.client_ports.len() {
            if self.children[i].is_none() {
                continue;
            }
            let Some(out) = etcdctl(&self.url(i), &["endpoint", "status", "-w", "fields"]) else {
                continue;
            };
            let field = |name: &str| {
                out.lines()
                    .find(|l| l.starts_with(&format!("\"{name}\"")))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|v| v.trim().to_owned())
            };
            if let (Some(me), Some(leader)) = (field("MemberID"), field("Leader")) {
                if leader != "0" {
                    return Some(if me == leader {
                        i
                    } else {
                        self.member_index(&leader)?
                    });
                }
            }
        }
        None
    }

    /// Which member has the id `id` (decimal, as `etcdctl -w fields` prints it).
    fn member_index(&self, id: &str) -> Option<usize> {
        (0..self.client_ports.len()).find(|&i| {
            self.children[i].is_some()
                && etcdctl(&self.url(i), &["endpoint", "status", "-w", "fields"]).is_some_and(
                    |out| {
                        out.lines().any(|l| {
                            l.starts_with("\"MemberID\"") && l.ends_with(&format!(": {id}"))
                        })
                    },
                )
        })
    }

    /// Stops member `i` (killed: what a crash looks like).
    pub(crate) fn stop(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            child.kill().ok();
            child.wait().ok();
        }
    }

    /// Starts member `i` again, with its data.
    pub(crate) fn restart(&mut self, i: usize) {
        if self.children[i].is_none() {
            assert!(
                self.start_member(i),
                "etcd member {i} did not start again: another process took its port"
            );
        }
    }

    /// Every member stopped.
    pub(crate) fn stop_all(&mut self) {
        for i in 0..self.children.len() {
            self.stop(i);
        }
    }

    /// Every member started again.
    pub(crate) fn restart_all(&mut self) {
        for i in 0..self.children.len() {
            self.restart(i);
        }
    }

    /// Runs `etcdctl` against the running members.
    pub(crate) fn ctl(&self, args: &[&str]) -> Option<String> {
        let urls: Vec<String> = (0..self.client_ports.len())
            .filter(|&i| self.children[i].is_some())
            .map(|i| self.url(i))
            .collect();
        etcdctl(&urls.join(","), args)
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        self.stop_all();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `etcdctl` against `endpoints`; its output when it succeeds.
fn etcdctl(endpoints: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            endpoints,
            "--dial-timeout",
            "1s",
            "--command-timeout",
            "2s",
        ])
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
