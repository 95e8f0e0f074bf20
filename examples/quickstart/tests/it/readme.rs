//! The README's embedding example, run as it is written (the binary `embedding`): it listens
//! whatever its history store does. A file another process holds and a directory that cannot
//! be written each leave `/healthcheck/live` answering within a second, the store said by
//! the dependency `history`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use crate::processes::{free_port, Process};

#[test]
fn the_readme_runs_the_embedding_as_it_is_written() {
    let readme = include_str!("../../../../README.md");
    let start = readme
        .find("Embedding it is a few lines")
        .expect("the README's embedding section");
    let block = &readme[start..];
    let block = &block[block.find("```rust,no_run\n").unwrap() + "```rust,no_run\n".len()..];
    let block = &block[..block.find("```\n").unwrap()];
    let file = include_str!("../../src/bin/embedding.rs");
    let code: String = file
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(block, code, "README.md and src/bin/embedding.rs differ");
}

/// A fresh directory for one run.
fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("status-embedding-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The embedding in `dir` on a free port, as user and group `user` when given (root reads
/// and writes any directory: a read-only one is read-only to another user).
fn embedding(dir: &Path, user: Option<u32>) -> (Process, SocketAddr) {
    let port = free_port();
    let binary = env!("CARGO_BIN_EXE_embedding");
    let mut command = match user {
        Some(user) => {
            let mut c = Command::new("setpriv");
            c.args([
                &format!("--reuid={user}"),
                &format!("--regid={user}"),
                "--clear-groups",
                "--",
                binary,
            ]);
            c
        }
        None => Command::new(binary),
    };
    let child = command
        .current_dir(dir)
        .env("LISTEN", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the embedding starts");
    (Process(child), SocketAddr::from(([127, 0, 0, 1], port)))
}

/// How long `/healthcheck/live` took to answer 200 after the start, if within `patience`.
async fn live_within(addr: SocketAddr, started: Instant, patience: Duration) -> Option<Duration> {
    while started.elapsed() < patience {
        if tokio::net::TcpStream::connect(addr).await.is_ok()
            && common::request(addr, "GET", "/healthcheck/live", None, "")
                .await
                .0
                == 200
        {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// Starts the embedding in `dir` and waits a second for `/healthcheck/live`; a start slowed by
/// a busy machine is given one more try (a start that waits for the store fails both).
async fn starts_live(dir: &Path, user: Option<u32>) -> (Process, SocketAddr) {
    for _ in 0..2 {
        let started = Instant::now();
        let (process, addr) = embedding(dir, user);
        if live_within(addr, started, Duration::from_secs(1))
            .await
            .is_some()
        {
            return (process, addr);
        }
    }
    panic!(
        "the embedding in {} never answered /healthcheck/live within a second",
        dir.display()
    );
}

/// What `/healthcheck` says of the dependency `history`, once it says something other than OK.
async fn history_said(addr: SocketAddr) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = common::get_json(addr, "/healthcheck").await;
        // Indeed's format: the dependencies listed under their level.
        let history = body["results"]
            .as_object()
            .into_iter()
            .flat_map(|levels| levels.values())
            .filter_map(|level| level.as_array())
            .flatten()
            .find(|d| d["id"] == "history")
            .cloned()
            .unwrap_or_default();
        if history["status"].as_str().is_some_and(|s| s != "OK") {
            return history.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "history never said the store's trouble: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_listens_with_its_file_held_by_another_process() {
    let dir = temp("held");
    let (_first, first) = starts_live(&dir, None).await;
    // The first one has the file (its history is open and owns it).
    common::until(first, "the first has its history", async || {
        dir.join("status-history.db").exists()
    })
    .await;
    let (_second, second) = starts_live(&dir, None).await;
    let said = history_said(second).await;
    assert!(said.contains("another process"), "{said}");
    // The first is untroubled.
    let (status, _) = common::get_json(first, "/healthcheck/ready").await;
    assert_eq!(status, 200);
}

/// `nobody`, and its group (`nogroup` or `nobody`, by the distribution).
const NOBODY: u32 = 65534;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_listens_in_a_directory_that_cannot_be_written() {
    let dir = temp("readonly");
    let mut permissions = std::fs::metadata(&dir).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o555);
    std::fs::set_permissions(&dir, permissions).unwrap();
    let root = rustix::process::geteuid().is_root();
    let (_process, addr) = starts_live(&dir, root.then_some(NOBODY)).await;
    let said = history_said(addr).await;
    assert!(said.contains("cannot open"), "{said}");
    assert!(!dir.join("status-history.db").exists());
}

/// The README's table of default features says what each crate's `Cargo.toml` does.
#[test]
fn the_readme_says_each_crates_default_features_as_its_manifest_does() {
    let readme = include_str!("../../../../README.md");
    let manifests = [
        (
            "status-core",
            include_str!("../../../../status-core/Cargo.toml"),
        ),
        (
            "status-checks",
            include_str!("../../../../status-checks/Cargo.toml"),
        ),
        (
            "status-history",
            include_str!("../../../../status-history/Cargo.toml"),
        ),
        (
            "status-notify",
            include_str!("../../../../status-notify/Cargo.toml"),
        ),
        (
            "status-fleet",
            include_str!("../../../../status-fleet/Cargo.toml"),
        ),
        (
            "status-http",
            include_str!("../../../../status-http/Cargo.toml"),
        ),
        (
            "status-page",
            include_str!("../../../../status-page/Cargo.toml"),
        ),
        (
            "status-mcp",
            include_str!("../../../../status-mcp/Cargo.toml"),
        ),
        (
            "status-grpc",
            include_str!("../../../../status-grpc/Cargo.toml"),
        ),
    ];
    for (name, manifest) in manifests {
        let defaults: Vec<String> = manifest
            .lines()
            .find_map(|l| l.strip_prefix("default = ["))
            .map(|l| {
                l.trim_end_matches(']')
                    .split(',')
                    .map(|f| f.trim().trim_matches('"').to_owned())
                    .filter(|f| !f.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row for {name} in the README's table"));
        let said = row.split('|').nth(2).unwrap().trim();
        let said: Vec<String> = if said.starts_with("none") {
            Vec::new()
        } else {
            said.split(", ")
                .map(|f| f.trim_matches('`').to_owned())
                .collect()
        };
        assert_eq!(said, defaults, "{name}: the README says {row}");
    }
}
