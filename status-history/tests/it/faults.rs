//! A store that fails: a file locked by another process, a full disk, a directory that
//! cannot be written. Each time `history` says so, checks and the report never wait, and
//! writing resumes (with what was held back) when the store does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rusqlite::Connection;
use status_core::{check, CheckStatus, Dependency, Registry};
use status_history::{History, Series, HISTORY_ID};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "status-history-faults-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn registry(deps: usize) -> Registry {
    let registry = Registry::builder().jitter(0.0).build();
    for i in 0..deps {
        registry
            .add(
                Dependency::builder(
                    format!("dep-{i}"),
                    check::tiered(|| async { (CheckStatus::Ok, "fine".to_owned()) }),
                )
                .period(Duration::from_secs(1))
                .build()
                .unwrap(),
            )
            .unwrap();
    }
    registry
}

fn said(registry: &Registry) -> (CheckStatus, String) {
    let r = registry.result(HISTORY_ID).expect("the history dependency");
    (r.status(), r.message().to_owned())
}

/// Runs (paused) time forward by `secs` seconds, a second at a time, asserting that the
/// report is answered at once meanwhile.
async fn run_for(registry: &Registry, secs: u64) {
    for _ in 0..secs * 4 {
        let asked = std::time::Instant::now();
        let _ = registry.report();
        assert!(
            asked.elapsed() < Duration::from_millis(50),
            "the report waited on the store"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_locked_file_is_said_and_writing_resumes_when_released() {
    let dir = temp("locked");
    let path = dir.join("history.db");
    let registry = registry(3);
    let history = History::sqlite(&path)
        .aggregate_every(Duration::from_secs(1))
        .open();
    history.attach(&registry);
    run_for(&registry, 3).await;
    assert_eq!(said(&registry).0, CheckStatus::Ok, "{:?}", said(&registry));

    // Another process takes the write lock and keeps it.
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    run_for(&registry, 4).await;
    let (level, message) = said(&registry);
    assert_eq!(level, CheckStatus::Minor, "{message}");
    assert!(
        message.contains("writes failing") && message.contains("locked"),
        "{message}"
    );
    assert!(history.stats().failures > 0);
    assert!(history.stats().backlog > 0);

    other.execute_batch("ROLLBACK").unwrap();
    drop(other);
    run_for(&registry, 3).await;
    assert_eq!(said(&registry).0, CheckStatus::Ok, "{:?}", said(&registry));
    assert_eq!(history.stats().backlog, 0);
    // What was held back was written: no minute of the lock is missing.
    history.flush().await;
    let now = registry.clock().wall();
    let report = history
        .uptime(
            Series::Dependency("dep-0".into()),
            now - chrono::Duration::minutes(5),
            now,
        )
        .await
        .unwrap();
    assert!(report.spent.ok >= 8_000, "{:?}", report.spent);
    assert!(report.checks >= 8, "{}", report.checks);
}

#[tokio::test(start_paused = true)]
async fn a_directory_that_cannot_be_written_is_said_and_opened_when_it_can() {
    let dir = temp("readonly").join("missing");
    let path = dir.join("history.db");
    let registry = registry(1);
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    run_for(&registry, 2).await;
    let (level, message) = said(&registry);
    assert_ne!(level, CheckStatus::Ok, "{message}");
    assert!(
        message.contains("cannot open the sqlite store"),
        "{message}"
    );
    // The directory appears: the store opens at the next try (every 10 s).
    std::fs::create_dir_all(&dir).unwrap();
    run_for(&registry, 11).await;
    assert_eq!(said(&registry).0, CheckStatus::Ok, "{:?}", said(&registry));
    assert!(path.exists());
}

/// Mounts a tmpfs of `kb` KiB at `at`, if this machine lets the tests (root in a
/// container that allows it, as CI's does).
fn mount_tmpfs(at: &Path, kb: u32) -> bool {
    std::fs::create_dir_all(at).unwrap();
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={kb}k"), "tmpfs"])
        .arg(at)
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(start_paused = true)]
async fn a_full_disk_is_said_and_writing_resumes_when_space_is_freed() {
    let dir = temp("full").join("disk");
    std::fs::create_dir_all(&dir).unwrap();
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    // A real 512 KiB tmpfs where the machine lets the tests mount one (root, as CI and this
    // machine run them); else (or with STATUS_TEST_NO_MOUNT set) SQLite's own cap on the
    // file, which fails writes the same way ("database or disk is full").
    let mounted = std::env::var_os("STATUS_TEST_NO_MOUNT").is_none() && mount_tmpfs(&dir, 512);
    let _unmount = mounted.then(|| Unmount(dir.clone()));
    if !mounted {
        eprintln!("no tmpfs can be mounted here: a 64-page cap on the file stands in for the disk");
    }
    let path = dir.join("history.db");
    let registry = registry(50);
    let store = if mounted {
        status_history::SqliteHistory::file(&path)
    } else {
        status_history::SqliteHistory::file(&path).max_pages(64)
    };
    let history = History::builder(store)
        .aggregate_every(Duration::from_secs(1))
        .open();
    history.attach(&registry);
    run_for(&registry, 2).await;
    assert_eq!(said(&registry).0, CheckStatus::Ok, "{:?}", said(&registry));
    // Fill the disk with ballast: a file beside it, or pages of the database itself.
    let ballast = dir.join("ballast");
    let other = Connection::open(&path).unwrap();
    if mounted {
        let free = fs_free(&dir);
        std::fs::write(&ballast, vec![0u8; free as usize]).ok();
    } else {
        other
            .execute_batch("CREATE TABLE ballast (b BLOB); INSERT INTO ballast SELECT zeroblob(4000) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 80) SELECT i FROM n);")
            .unwrap();
    }
    // Rows that need new pages: a burst of audit records.
    for i in 0..200 {
        history.record_audit(status_history::AuditRecord {
            at: chrono::DateTime::from_timestamp_millis(i).unwrap(),
            actor: Some("test".into()),
            action: "fill".into(),
            target: "disk".into(),
            reason: Some("x".repeat(200)),
            address: None,
            outcome: "done".into(),
        });
    }
    run_for(&registry, 4).await;
    let (level, message) = said(&registry);
    assert_eq!(level, CheckStatus::Minor, "{message}");
    assert!(message.contains("full"), "{message}");
    // Checks went on meanwhile.
    assert!(registry.result("dep-0").unwrap().status() == CheckStatus::Ok);

    if mounted {
        std::fs::remove_file(&ballast).unwrap();
    } else {
        other.execute_batch("DROP TABLE ballast").unwrap();
    }
    run_for(&registry, 3).await;
    assert_eq!(said(&registry).0, CheckStatus::Ok, "{:?}", said(&registry));
    assert_eq!(history.stats().backlog, 0);
}

fn fs_free(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(start_paused = true)]
async fn a_corrupt_file_is_moved_aside_said_and_replaced() {
    let dir = temp("corrupt");
    let path = dir.join("history.db");
    std::fs::write(&path, b"not a database, whatever it was".repeat(1000)).unwrap();
    let registry = registry(1);
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    run_for(&registry, 2).await;
    let (level, message) = said(&registry);
    assert_eq!(level, CheckStatus::Minor, "{message}");
    assert!(
        message.contains("corrupt") && message.contains("moved aside"),
        "{message}"
    );
    let aside: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    // The fresh file takes what is recorded.
    history.flush().await;
    assert!(history.stats().written > 0);
    assert!(
        Connection::open(&path)
            .unwrap()
            .query_row("SELECT count(*) FROM transitions", [], |r| r
                .get::<_, i64>(0))
            .unwrap()
            > 0
    );
}
