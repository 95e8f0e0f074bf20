//! One process per store, and only our files: a second process on a file is refused and
//! says who holds it, a file of another application or of a newer version is left exactly
//! as it was, and what an operator changed while the store could not be opened is not
//! undone when it opens.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use status_core::{check, CheckStatus, Dependency, Feature, FeatureOverride, MuteWindow, Registry};
use status_history::{History, SqliteStore, HISTORY_ID};

fn temp(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("status-history-own-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("history.db")
}

fn registry() -> Registry {
    let registry = Registry::builder().jitter(0.0).build();
    registry
        .add(
            Dependency::builder(
                "db",
                check::tiered(|| async { (CheckStatus::Ok, "fine".to_owned()) }),
            )
            .period(Duration::from_secs(1))
            .build()
            .unwrap(),
        )
        .unwrap();
    registry
        .add_feature(
            Feature::builder("checkout")
                .requires("db", CheckStatus::Minor)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
}

async fn run_for(secs: u64) {
    for _ in 0..secs * 4 {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn rows(path: &Path, table: &str) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_second_keeper_of_one_file_is_refused_says_who_and_writes_nothing() {
    let path = temp("second");
    let first = registry();
    let history = History::sqlite(&path).open();
    history.attach(&first);
    run_for(2).await;
    history.flush().await;
    let runs = rows(&path, "runs");
    let transitions = rows(&path, "transitions");

    let second = registry();
    let other = History::sqlite(&path).open();
    other.attach(&second);
    run_for(3).await;
    let said = second.result(HISTORY_ID).unwrap();
    assert_ne!(said.status(), CheckStatus::Ok, "{}", said.message());
    assert!(
        said.message().contains("in use by another process")
            && said
                .message()
                .contains(&format!("pid {}", std::process::id())),
        "{}",
        said.message()
    );
    assert_eq!(rows(&path, "runs"), runs, "the second started no run");
    let err = SqliteStore::open(&path, 0).unwrap_err();
    assert!(err.is_locked(), "{err}");

    // The first lets go (its registry is gone): the second opens at its next try.
    history.close().await;
    drop(first);
    run_for(3).await;
    let said = second.result(HISTORY_ID).unwrap();
    assert_eq!(said.status(), CheckStatus::Ok, "{}", said.message());
    other.flush().await;
    assert_eq!(rows(&path, "runs"), runs + 1);
    assert!(rows(&path, "transitions") > transitions);
}

#[test]
fn files_that_are_not_ours_are_refused_and_left_exactly_as_they_were() {
    // Another application's database, and one of a newer status-history, both in the
    // default rollback journal (a WAL switch would be a write).
    let foreign = temp("foreign");
    {
        let conn = Connection::open(&foreign).unwrap();
        conn.execute_batch(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');",
        )
        .unwrap();
    }
    let newer = temp("newer-untouched");
    {
        let conn = Connection::open(&newer).unwrap();
        conn.execute_batch(
            "CREATE TABLE series (x); CREATE TABLE buckets (x); CREATE TABLE runs (x);
             CREATE TABLE transitions (x); PRAGMA user_version = 99;",
        )
        .unwrap();
    }
    for (path, what) in [(&foreign, "not a status-history file"), (&newer, "newer")] {
        let before = std::fs::read(path).unwrap();
        let err = SqliteStore::open(path, 0).unwrap_err();
        assert!(err.is_foreign(), "{err}");
        assert!(err.to_string().contains(what), "{err}");
        assert_eq!(
            std::fs::read(path).unwrap(),
            before,
            "{} was written",
            path.display()
        );
        let mode: String = Connection::open(path)
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "delete", "{}", path.display());
    }
    // Ours is stamped with the application id, and opens again.
    let ours = temp("ours");
    drop(SqliteStore::open(&ours, 0).unwrap());
    let id: i64 = Connection::open(&ours)
        .unwrap()
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(id, 0x5354_4853);
    assert!(SqliteStore::open(&ours, 1).is_ok());
}

/// The file is held by another process for 25 s at start; meanwhile an operator turns the
/// kill switch back on and ends the mute the last run left. When the store opens, neither
/// is undone, and what was skipped is said.
#[tokio::test(start_paused = true)]
async fn an_operator_s_change_made_while_the_store_was_held_survives_its_opening() {
    let path = temp("late");
    {
        let registry = registry();
        let history = History::sqlite(&path).open();
        history.attach(&registry);
        let _ = history.restored().await;
        registry
            .mute(
                "db",
                MuteWindow::For(Duration::from_secs(3600)),
                "vendor",
                None,
            )
            .unwrap();
        registry
            .override_feature(
                "checkout",
                &FeatureOverride::new(false, Duration::from_secs(3600), "kill switch").unwrap(),
            )
            .unwrap();
        run_for(2).await;
        history.close().await;
    }
    // Another process holds the file's lock.
    let holder = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("{}.lock", path.display()))
        .unwrap();
    holder.lock().unwrap();

    let registry = registry();
    let history = History::sqlite(&path).open();
    history.attach(&registry);
    run_for(2).await;
    assert_ne!(
        registry.result(HISTORY_ID).unwrap().status(),
        CheckStatus::Ok
    );
    // The operator acts before the store opens: the switch on, the mute (not restored yet)
    // ended.
    registry
        .override_feature(
            "checkout",
            &FeatureOverride::new(true, Duration::from_secs(600), "back on")
                .unwrap()
                .actor("carol"),
        )
        .unwrap();
    assert!(registry.unmute("db").unwrap().is_none());
    run_for(23).await;
    drop(holder);
    let restored = history.restored().await;
    assert_eq!((restored.mutes, restored.overrides), (0, 0), "{restored:?}");
    assert_eq!(restored.skipped.len(), 2, "{restored:?}");
    run_for(2).await;
    let checkout = registry.feature("checkout").unwrap().state();
    assert!(checkout.enabled, "the operator's override stands");
    assert_eq!(checkout.override_.unwrap().actor.as_deref(), Some("carol"));
    assert!(
        registry.muted("db").is_none(),
        "the operator's unmute stands"
    );
    assert_eq!(
        registry.result(HISTORY_ID).unwrap().status(),
        CheckStatus::Ok
    );
}

/// The lock file is never followed through a link: one that is a symbolic link, or a hard
/// link to another file (the history itself, say), is refused, and what it points to is left
/// byte for byte as it was.
#[test]
fn a_lock_file_that_is_a_link_is_refused_and_its_target_left_alone() {
    let path = temp("lock-symlink");
    let victim = path.with_file_name("precious.txt");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, format!("{}.lock", path.display())).unwrap();
    let err = SqliteStore::open(&path, 0).unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");

    let path = temp("lock-hardlink");
    drop(SqliteStore::open(&path, 0).unwrap());
    let before = std::fs::read(&path).unwrap();
    std::fs::remove_file(format!("{}.lock", path.display())).unwrap();
    std::fs::hard_link(&path, format!("{}.lock", path.display())).unwrap();
    let err = SqliteStore::open(&path, 0).unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert!(err.to_string().contains("hard link"), "{err}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the history is untouched"
    );
}

/// The lock goes with the file, not with its name: a history opened through a symbolic link
/// or a hard link to a file another history holds is refused, as the file itself is.
#[test]
fn a_file_held_under_one_name_is_refused_under_another() {
    let path = temp("aliases");
    let held = SqliteStore::open(&path, 0).unwrap();
    let symlink = path.with_file_name("alias.db");
    std::os::unix::fs::symlink(&path, &symlink).unwrap();
    let hard = path.with_file_name("hard.db");
    std::fs::hard_link(&path, &hard).unwrap();
    for alias in [&symlink, &hard] {
        let err = SqliteStore::open(alias, 0).unwrap_err();
        assert!(err.is_locked(), "{}: {err}", alias.display());
    }
    // Let go, the file opens under any of its names.
    drop(held);
    drop(SqliteStore::open(&hard, 0).unwrap());
}
