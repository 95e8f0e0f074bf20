//! Real servers for the tests, on free loopback ports, stopped when dropped.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "listener.rs"]
pub(crate) mod listener;
pub(crate) use listener::free_port;
use listener::wait_until_held;

fn wait_for_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn require(program: &str) -> PathBuf {
    // Servers such as mariadbd are in sbin, which a user's PATH may lack.
    let sbin = ["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from);
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain(sbin)
            .map(|p| p.join(program))
            .find(|p| p.exists())
    });
    found
        .unwrap_or_else(|| panic!("{program} is not installed: scripts/test installs it (apt-get)"))
}

/// A server a test can stop and start again on the same port.
pub(crate) trait Restartable {
    fn stop(&mut self);
    fn restart(&mut self);
}

impl Restartable for RedisServer {
    fn stop(&mut self) {
        RedisServer::stop(self);
    }
    fn restart(&mut self) {
        RedisServer::restart(self);
    }
}

impl Restartable for PostgresServer {
    fn stop(&mut self) {
        PostgresServer::stop(self);
    }
    fn restart(&mut self) {
        PostgresServer::restart(self);
    }
}

/// A `redis-server` with no persistence.
pub(crate) struct RedisServer {
    pub(crate) port: u16,
    child: Option<Child>,
    /// Its arguments besides the port and persistence.
    args: &'static [&'static str],
}

impl RedisServer {
    pub(crate) fn start() -> Self {
        Self::start_with(&[])
    }

    /// One started with these arguments too (`--enable-debug-command yes`).
    pub(crate) fn start_with(args: &'static [&'static str]) -> Self {
        for _ in 0..10 {
            let mut server = Self {
                port: free_port(),
                child: None,
                args,
            };
            if server.spawn() {
                return server;
            }
        }
        panic!("redis-server found no free port in ten tries");
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts it again on the same port.
    pub(crate) fn restart(&mut self) {
        assert!(
            self.spawn(),
            "redis-server did not start again: another process took port {}",
            self.port
        );
    }

    /// Starts it on its port: whether the port is its own.
    fn spawn(&mut self) -> bool {
        let mut child = Command::new(require("redis-server"))
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let held = wait_until_held(&mut child, &[self.port], "redis-server");
        self.child = Some(child);
        held
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().ok();
            child.wait().ok();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Redis Cluster of three masters with one replica each, on free loopback ports, in a
/// temporary directory; stopped and removed when dropped.
pub(crate) struct RedisCluster {
    pub(crate) ports: Vec<u16>,
    children: Vec<Option<Child>>,
    dir: PathBuf,
}

static REDIS_CLUSTERS: AtomicUsize = AtomicUsize::new(0);

/// A free port for a cluster node whose bus port (10,000 above it, which Redis requires to
/// be a port at all) is free too when chosen: a bus port another socket holds kept a node
/// from starting under the whole suite's load.
fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port <= 55_535 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

impl RedisCluster {
    pub(crate) fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "status-redis-cluster-{}-{}",
            std::process::id(),
            REDIS_CLUSTERS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let ports: Vec<u16> = (0..6).map(|_| free_cluster_port()).collect();
        let mut cluster = Self {
            children: ports.iter().map(|_| None).collect(),
            ports,
            dir,
        };
        for i in 0..6 {
            let mut tries = 0;
            while !cluster.start_node(i) {
                tries += 1;
                assert!(tries < 10, "a cluster node found no free port in ten tries");
                cluster.kill(i);
                cluster.ports[i] = free_cluster_port();
            }
        }
        let mut create = Command::new(require("redis-cli"));
        create.arg("--cluster").arg("create");
        for port in &cluster.ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        let out = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        for port in cluster.ports.clone() {
            cluster.wait_until_ok(port);
        }
        // And every master has its replica in sync (once, under the whole suite's load, one
        // was not within 30 s).
        let deadline = Instant::now() + Duration::from_secs(60);
        for port in cluster.ports.clone() {
            loop {
                let info = Self::cli(port, &["info", "replication"]);
                let synced = info.contains("role:slave") && info.contains("master_link_status:up")
                    || info.contains("role:master") && info.contains("connected_slaves:1");
                if synced {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "replication never came up on {port}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        cluster
    }

    /// Starts node `i` on its port: whether the port is its own.
    fn start_node(&mut self, i: usize) -> bool {
        let port = self.ports[i];
        let mut child = Command::new(require("redis-server"))
            .current_dir(&self.dir)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
            .args(["--cluster-node-timeout", "1000"])
            // A replica's first sync starts at once, not after Redis's default 5 s wait for
            // more replicas to share it.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let held = wait_until_held(&mut child, &[port], "redis-server (cluster)");
        self.children[i] = Some(child);
        held
    }

    /// The seed URLs, separated by commas.
    pub(crate) fn urls(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn cli(port: u16, args: &[&str]) -> String {
        let out = Command::new(require("redis-cli"))
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the node on `port` says the cluster is ok.
    pub(crate) fn wait_until_ok(&self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !Self::cli(port, &["cluster", "info"]).contains("cluster_state:ok") {
            assert!(
                Instant::now() < deadline,
                "the cluster never came up on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The index of the master that holds `key`'s slot.
    pub(crate) fn master_of(&self, key: &str) -> usize {
        let live = self.children.iter().position(Option::is_some).unwrap();
        let slot: u16 = Self::cli(self.ports[live], &["cluster", "keyslot", key])
            .trim()
            .parse()
            .unwrap();
        let nodes = Self::cli(self.ports[live], &["cluster", "nodes"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            let port: u16 = fields[1]
                .split(['@', ':'])
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap();
            let holds = fields[8..].iter().any(|range| {
                let (from, to) = range.split_once('-').unwrap_or((range, range));
                match (from.parse::<u16>(), to.parse::<u16>()) {
                    (Ok(from), Ok(to)) => (from..=to).contains(&slot),
                    _ => false,
                }
            });
            if holds {
                return self.ports.iter().position(|p| *p == port).unwrap();
            }
        }
        panic!("no master holds slot {slot}: {nodes}");
    }

    /// Kills node `i` (a master fails; its replica takes over within a few seconds).
    pub(crate) fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            child.kill().ok();
            child.wait().ok();
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A PostgreSQL cluster in a temporary directory, run as the `postgres` user when the tests
/// run as root (PostgreSQL refuses to run as root).
pub(crate) struct PostgresServer {
    pub(crate) port: u16,
    dir: PathBuf,
    bin: PathBuf,
    as_postgres: bool,
    running: bool,
}

static CLUSTERS: AtomicUsize = AtomicUsize::new(0);

fn postgres_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.filter_map(|e| e.ok().map(|e| e.path().join("bin")))
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions
        .pop()
        .filter(|bin| bin.join("pg_ctl").exists())
        .unwrap_or_else(|| {
            panic!("PostgreSQL is not installed: scripts/test installs it (apt-get install postgresql)")
        })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl PostgresServer {
    pub(crate) fn start() -> Self {
        let bin = postgres_bin();
        let dir = std::env::temp_dir().join(format!(
            "status-pg-{}-{}",
            std::process::id(),
            CLUSTERS.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let as_postgres = is_root();
        if as_postgres {
            let status = Command::new("chown")
                .args(["postgres:postgres", dir.to_str().unwrap()])
                .status()
                .unwrap();
            assert!(status.success(), "chown of the cluster directory");
        }
        let mut server = Self {
            port: free_port(),
            dir,
            bin,
            as_postgres,
            running: false,
        };
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        );
        // The port is chosen again just before each start, and another tried if the start
        // fails: initdb takes seconds, and another test's server may take a port meanwhile.
        for _ in 0..10 {
            server.port = free_port();
            if server.start_on_port() {
                return server;
            }
        }
        panic!(
            "postgres did not start in ten tries: {}",
            std::fs::read_to_string(server.dir.join("log")).unwrap_or_default()
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let output = self.output(tool, args);
        assert!(
            output.status.success(),
            "{tool} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn output(&self, tool: &str, args: &[&str]) -> std::process::Output {
        let program = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut c = Command::new("setpriv");
            c.args([
                "--reuid=postgres",
                "--regid=postgres",
                "--init-groups",
                "--",
            ]);
            c.arg(&program);
            c
        } else {
            Command::new(&program)
        };
        command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    }

    pub(crate) fn config(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    /// Starts it (again, on the same port).
    pub(crate) fn restart(&mut self) {
        assert!(
            self.start_on_port(),
            "postgres did not start on {}",
            self.port
        );
    }

    /// Starts it on its port: whether it did (`pg_ctl -w` waits for it to accept
    /// connections, and fails if it exits, as on a port taken).
    fn start_on_port(&mut self) -> bool {
        let data = self.data();
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log");
        let started = self
            .output(
                "pg_ctl",
                &[
                    "-D",
                    data.to_str().unwrap(),
                    "-o",
                    &options,
                    "-l",
                    log.to_str().unwrap(),
                    "-w",
                    "start",
                ],
            )
            .status
            .success();
        if started {
            self.running = true;
            wait_for_port(self.port, "postgres");
        }
        started
    }

    pub(crate) fn stop(&mut self) {
        if self.running {
            let data = self.data();
            self.run(
                "pg_ctl",
                &[
                    "-D",
                    data.to_str().unwrap(),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
            );
            self.running = false;
        }
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TCP server that accepts connections and never answers; counts connections the client
/// closed.
pub(crate) struct Silent {
    pub(crate) port: u16,
    pub(crate) closed: std::sync::Arc<AtomicUsize>,
    pub(crate) accepted: std::sync::Arc<AtomicUsize>,
}

impl Silent {
    pub(crate) async fn start() -> Self {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let closed = std::sync::Arc::new(AtomicUsize::new(0));
        let accepted = std::sync::Arc::new(AtomicUsize::new(0));
        let (c, a) = (closed.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                let c = c.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    // Read and ignore until the client closes its end.
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                    c.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Self {
            port,
            closed,
            accepted,
        }
    }

    /// Waits until every accepted connection was closed by the client, for at most 5 s.
    pub(crate) async fn all_closed(&self) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let (a, c) = (
                self.accepted.load(Ordering::SeqCst),
                self.closed.load(Ordering::SeqCst),
            );
            if a > 0 && a == c {
                return true;
            }
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A server process started from a command line on a free port, restartable on that port.
pub(crate) struct Process {
    pub(crate) port: u16,
    program: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// The ports it listens on: `port`, and `{other}` when its command line names it.
    ports: Vec<u16>,
    /// Its directory, removed when dropped.
    dir: PathBuf,
    child: Option<Child>,
}

static PROCESSES: AtomicUsize = AtomicUsize::new(0);

impl Process {
    /// Starts `program` with `args`, where `{port}` is replaced by a free port (the one
    /// waited for), `{other}` by another, `{dir}` by a directory of its own.
    pub(crate) fn start(program: &'static str, args: &[&str]) -> Self {
        Self::prepared(program, args, |_| {})
    }

    /// As [`start`](Self::start), after `prepare` has been given the directory (made).
    pub(crate) fn prepared(
        program: &'static str,
        args: &[&str],
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        Self::with_env(program, args, &[], prepare)
    }

    /// As [`prepared`](Self::prepared), with environment variables (replaced alike). When
    /// another process takes a port before the program listens on it, the program is
    /// started again on others.
    pub(crate) fn with_env(
        program: &'static str,
        args: &[&str],
        env: &[(&str, &str)],
        prepare: impl FnOnce(&std::path::Path),
    ) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "status-{}-{}-{}",
            program.rsplit('/').next().unwrap_or(program),
            std::process::id(),
            PROCESSES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        prepare(&dir);
        let names_other = args
            .iter()
            .chain(env.iter().map(|(_, v)| v))
            .any(|a| a.contains("{other}"));
        let mut process = Self {
            port: 0,
            program,
            args: Vec::new(),
            env: Vec::new(),
            ports: Vec::new(),
            dir,
            child: None,
        };
        for _ in 0..10 {
            let (port, other) = (free_port(), free_port());
            let fill = |a: &str| {
                a.replace("{port}", &port.to_string())
                    .replace("{other}", &other.to_string())
                    .replace("{dir}", &process.dir.display().to_string())
            };
            process.args = args.iter().map(|a| fill(a)).collect();
            process.env = env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), fill(v)))
                .collect();
            process.port = port;
            process.ports = if names_other {
                vec![port, other]
            } else {
                vec![port]
            };
            if process.spawn() {
                return process;
            }
            process.stop();
        }
        panic!("{program} found no free port in ten tries");
    }

    /// Starts it again on the same port.
    pub(crate) fn restart(&mut self) {
        assert!(
            self.spawn(),
            "{} did not start again: another process took one of {:?}",
            self.program,
            self.ports
        );
    }

    /// Starts it on its ports: whether they are its own.
    fn spawn(&mut self) -> bool {
        use std::os::unix::process::CommandExt;
        let program = if self.program.starts_with('/') {
            PathBuf::from(self.program)
        } else {
            require(self.program)
        };
        // A group of its own: a server started by a script (RabbitMQ's) is stopped whole.
        let mut child = Command::new(program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.program));
        let held = wait_until_held(&mut child, &self.ports, self.program);
        self.child = Some(child);
        held
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{}", child.id())])
                .status()
                .ok();
            child.kill().ok();
            child.wait().ok();
        }
    }
}

impl Restartable for Process {
    fn stop(&mut self) {
        Process::stop(self);
    }
    fn restart(&mut self) {
        Process::restart(self);
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// memcached on loopback, as `nobody` when run as root.
pub(crate) fn memcached() -> Process {
    Process::start(
        "memcached",
        &[
            "-l",
            "127.0.0.1",
            "-p",
            "{port}",
            "-U",
            "0",
            "-u",
            "nobody",
            "-m",
            "16",
        ],
    )
}

/// A one-member etcd on loopback, its data in a directory of its own.
pub(crate) fn etcd() -> Process {
    etcd_with(&[])
}

/// As [`etcd`], with more flags.
pub(crate) fn etcd_with(more: &[&str]) -> Process {
    let args: Vec<&str> = [
        "--name",
        "solo",
        "--data-dir",
        "{dir}",
        "--listen-client-urls",
        "http://127.0.0.1:{port}",
        "--advertise-client-urls",
        "http://127.0.0.1:{port}",
        "--listen-peer-urls",
        "http://127.0.0.1:{other}",
        "--initial-advertise-peer-urls",
        "http://127.0.0.1:{other}",
        "--initial-cluster",
        "solo=http://127.0.0.1:{other}",
    ]
    .into_iter()
    .chain(more.iter().copied())
    .collect();
    Process::start("etcd", &args)
}

/// nats-server on loopback, with JetStream (its store in a directory of its own) or without.
pub(crate) fn nats(jetstream: bool) -> Process {
    if jetstream {
        Process::start(
            "nats-server",
            &["-a", "127.0.0.1", "-p", "{port}", "-js", "-sd", "{dir}"],
        )
    } else {
        Process::start("nats-server", &["-a", "127.0.0.1", "-p", "{port}"])
    }
}

/// MariaDB on loopback, its data in a directory of its own, any user let in.
pub(crate) fn mariadb() -> Process {
    Process::prepared(
        "mariadbd",
        &[
            "--no-defaults",
            "--datadir={dir}",
            "--port={port}",
            "--bind-address=127.0.0.1",
            "--socket={dir}/mysqld.sock",
            "--pid-file={dir}/mysqld.pid",
            "--user=root",
            "--skip-grant-tables",
            "--skip-name-resolve",
            "--innodb-buffer-pool-size=16M",
        ],
        |dir| {
            let status = Command::new(require("mariadb-install-db"))
                .arg("--no-defaults")
                .arg(format!("--datadir={}", dir.display()))
                .args(["--user=root", "--auth-root-authentication-method=normal"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("mariadb-install-db runs");
            assert!(status.success(), "mariadb-install-db failed");
        },
    )
}

/// RabbitMQ on loopback, a node of its own (name, ports, data), no plugin: about five seconds
/// to start. Run from its own script, not the wrapper that would switch to the `rabbitmq` user.
pub(crate) fn rabbitmq() -> Process {
    Process::with_env(
        "/usr/lib/rabbitmq/bin/rabbitmq-server",
        &[],
        &[
            ("HOME", "{dir}"),
            ("RABBITMQ_NODE_PORT", "{port}"),
            ("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1"),
            ("RABBITMQ_NODENAME", "status-{port}@localhost"),
            ("RABBITMQ_DIST_PORT", "{other}"),
            ("RABBITMQ_MNESIA_BASE", "{dir}/mnesia"),
            ("RABBITMQ_LOG_BASE", "{dir}/log"),
            ("RABBITMQ_ENABLED_PLUGINS_FILE", "{dir}/enabled_plugins"),
            ("RABBITMQ_CONFIG_FILES", "{dir}/none"),
        ],
        |dir| std::fs::write(dir.join("enabled_plugins"), "[].").unwrap(),
    )
}

/// A hostile peer on a free loopback port: every connection is handed to `behave` (a task of
/// its own each). Answers the port.
pub(crate) async fn hostile<F, Fut>(behave: F) -> u16
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((peer, _)) = listener.accept().await {
            tokio::spawn(behave(peer));
        }
    });
    port
}
