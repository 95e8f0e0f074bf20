//! The embedded store: one SQLite file, in WAL mode (a process killed mid-write loses
//! nothing committed), migrated on open, moved aside when corrupt.

mod adapter;
mod announce;
mod exclusions;
mod incidents;
mod read;
mod schema;
mod subscribers;
mod write;

pub use adapter::SqliteHistory;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use crate::error::Kind;
use crate::model::Series;
use crate::{Error, Writes};

pub(crate) use schema::{MIGRATIONS, VERSION};

/// What opening a file found.
#[derive(Debug)]
pub struct Opened {
    /// The store.
    pub store: SqliteStore,
    /// Where a corrupt file was moved, if it was.
    pub moved_aside: Option<PathBuf>,
}

/// A history kept in one SQLite file (or in memory, for tests).
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    series: HashMap<Series, i64>,
    run: i64,
    /// The file's lock, held while the store is open (released at exit, however it ends).
    lock: Option<FileLock>,
}

/// `PRAGMA application_id` of a history file: "STHS".
const APPLICATION_ID: i32 = 0x5354_4853;

/// The schema version of the file `conn` opened, read without writing anything; refused
/// when the file is another application's or a newer version's.
fn identify(conn: &Connection) -> Result<i64, Error> {
    let pragma = |name: &str| -> Result<i64, Error> {
        conn.pragma_query_value(None, name, |r| r.get(0))
            .map_err(Error::sqlite)
    };
    let application_id = pragma("application_id")?;
    let version = pragma("user_version")?;
    let mut tables: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .map_err(Error::sqlite)?;
        let names = stmt.query_map([], |r| r.get(0)).map_err(Error::sqlite)?;
        names.collect::<Result<_, _>>().map_err(Error::sqlite)?
    };
    let foreign = |why: String| Err(Error::of(Kind::Foreign, why));
    let ours = application_id == i64::from(APPLICATION_ID)
        // Files of earlier versions carry no id: their tables say whose they are.
        || (application_id == 0
            && (tables.is_empty()
                || ["buckets", "runs", "series", "transitions"]
                    .iter()
                    .all(|t| tables.iter().any(|name| name == t))));
    if !ours {
        tables.truncate(5);
        return foreign(format!(
            "not a status-history file (application id {application_id:#x}, tables {}): it \
             is left as it is; give the history a file of its own",
            tables.join(", ")
        ));
    }
    if version > VERSION {
        return foreign(format!(
            "the history file is at schema version {version}, written by a newer \
             status-history (this one knows up to {VERSION}); it is left as it is"
        ));
    }
    Ok(version)
}

/// The lock of a history file, held with `flock` (released by the system however the
/// process ends): `<path>.lock`, naming its holder for whoever is refused, and the database
/// file itself, so that a link to the file (symbolic or hard, under another name) is refused
/// as the file is: the lock goes with the file, not with the name it was opened by.
#[derive(Debug)]
struct FileLock {
    _file: std::fs::File,
    /// The database file, locked: dropped after the connection (a store's fields drop in
    /// order), since closing any descriptor of the file lets SQLite's own locks on it go.
    inode: std::fs::File,
}

impl FileLock {
    fn take(path: &Path, now: i64) -> Result<Self, Error> {
        use std::io::{Read, Seek, Write};
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        let unavailable = |e: std::io::Error| {
            Error::of(
                Kind::Unavailable,
                format!("cannot open {}: {e}", lock_path.display()),
            )
        };
        // Never through a link: a lock file that is a symbolic link is refused (ELOOP), so
        // that the holder's line cannot be written into another file.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
            .open(&lock_path)
            .map_err(unavailable)?;
        let meta = file.metadata().map_err(unavailable)?;
        if !meta.is_file() || meta.nlink() != 1 {
            return Err(Error::of(
                Kind::Unavailable,
                format!(
                    "{} is not a lock file (it is {}): refused, and left as it is",
                    lock_path.display(),
                    if meta.is_file() {
                        "a hard link to another file"
                    } else {
                        "not a regular file"
                    }
                ),
            ));
        }
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::of(
                    Kind::Locked,
                    format!(
                        "{} is in use by another process ({}): one process keeps a history \
                         file; nothing is written meanwhile",
                        path.display(),
                        if holder.is_empty() { "unknown" } else { holder }
                    ),
                ));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::of(
                    Kind::Unavailable,
                    format!("cannot lock {}: {e}", lock_path.display()),
                ))
            }
        }
        let inode = Self::hold(path)?;
        // Who holds it, for whoever is refused: best effort.
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let since = crate::model::millis(now).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = write!(
            file,
            "pid {} on {} since {since}",
            std::process::id(),
            host.trim()
        );
        Ok(Self { _file: file, inode })
    }

    /// The database file at `path` (created, owner-only, when there is none), locked: a
    /// file another history holds under another name is refused.
    fn hold(path: &Path) -> Result<std::fs::File, Error> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                Error::of(
                    Kind::Unavailable,
                    format!("cannot open {}: {e}", path.display()),
                )
            })?;
        match file.try_lock() {
            Ok(()) => Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::of(
                Kind::Locked,
                format!(
                    "{} is in use by another process: it is a file another history holds under \
                     another name (a link to it); one process keeps a history file",
                    path.display()
                ),
            )),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::of(
                Kind::Unavailable,
                format!("cannot lock {}: {e}", path.display()),
            )),
        }
    }
}

impl SqliteStore {
    /// Opens (creating and migrating) the file at `path`, starting a run at `now` (ms).
    ///
    /// Before anything is written: the file's lock (`<path>.lock`) is taken, so that one
    /// process at a time keeps a file (a second is refused, with who holds it); and the
    /// file is read to be ours (its application id, or for a file of an earlier version
    /// its tables) and of a version this one knows. A file that is not a database, or fails
    /// SQLite's quick check, is moved aside (renamed `<path>.corrupt-<now>`) and a fresh one
    /// started.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened or created (a directory missing or not writable:
    /// [`is_unavailable`](Error::is_unavailable)), another process holds it
    /// ([`is_locked`](Error::is_locked)), it is another application's database or was
    /// written by a newer version ([`is_foreign`](Error::is_foreign), left untouched),
    /// or a migration fails.
    pub fn open(path: &Path, now: i64) -> Result<Opened, Error> {
        let lock = FileLock::take(path, now)?;
        match Self::try_open(Connection::open(path).map_err(Error::sqlite), now) {
            Ok(mut store) => {
                store.lock = Some(lock);
                Ok(Opened {
                    store,
                    moved_aside: None,
                })
            }
            Err(e) if e.is_corrupt() => {
                let aside = PathBuf::from(format!("{}.corrupt-{now}", path.display()));
                std::fs::rename(path, &aside).map_err(|io| {
                    Error::new(format!(
                        "{} is corrupt ({e}) and could not be moved aside: {io}",
                        path.display()
                    ))
                })?;
                for suffix in ["-wal", "-shm"] {
                    let side = PathBuf::from(format!("{}{suffix}", path.display()));
                    let _ = std::fs::rename(&side, format!("{}{suffix}", aside.display()));
                }
                tracing::error!(
                    path = %path.display(),
                    aside = %aside.display(),
                    "the history file is corrupt ({e}): moved aside, a fresh one started"
                );
                // The fresh file is another file: it is held as the first was.
                let mut lock = lock;
                lock.inode = FileLock::hold(path)?;
                let mut store = Self::try_open(Connection::open(path).map_err(Error::sqlite), now)?;
                store.lock = Some(lock);
                Ok(Opened {
                    store,
                    moved_aside: Some(aside),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// A store in memory, for tests and simulations.
    ///
    /// # Errors
    ///
    /// Only if SQLite cannot allocate it.
    pub fn in_memory(now: i64) -> Result<Self, Error> {
        Self::try_open(Connection::open_in_memory().map_err(Error::sqlite), now)
    }

    fn try_open(conn: Result<Connection, Error>, now: i64) -> Result<Self, Error> {
        let conn = conn?;
        conn.busy_timeout(Duration::from_millis(250))
            .map_err(Error::sqlite)?;
        // Read only, before anything is written: whose file, and which version.
        let version = identify(&conn)?;
        if version == 0 {
            // Before any table: freed pages go back to the file system after a prune.
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
                .map_err(Error::sqlite)?;
        }
        let _: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(Error::sqlite)?;
        // With WAL, NORMAL loses nothing committed when the process dies; only a power loss
        // may take the last transactions.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(Error::sqlite)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(Error::sqlite)?;
        if check != "ok" {
            return Err(Error::corrupt(check));
        }
        migrate(&conn, version, VERSION)?;
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(Error::sqlite)?;
        conn.execute(
            "INSERT INTO runs (started, covered_until) VALUES (?1, ?1)",
            [now],
        )
        .map_err(Error::sqlite)?;
        let run = conn.last_insert_rowid();
        Ok(Self {
            conn,
            series: HashMap::new(),
            run,
            lock: None,
        })
    }

    /// The run this store was opened for.
    #[must_use]
    pub fn run(&self) -> i64 {
        self.run
    }

    /// The connection, for what the typed reads do not cover (tests, tools).
    #[must_use]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Commits `writes` in one transaction: all of it, or nothing.
    ///
    /// # Errors
    ///
    /// When SQLite fails (a full disk, a file locked past 250 ms, a read-only file);
    /// nothing is written then.
    pub fn write(&mut self, writes: &Writes) -> Result<(), Error> {
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
        let mut series = self.series.clone();
        write::write_all(&tx, &mut series, self.run, writes).map_err(Error::sqlite)?;
        tx.commit().map_err(Error::sqlite)?;
        self.series = series;
        Ok(())
    }
}

/// Applies the migrations after `from` up to `to`, each in a transaction.
pub(crate) fn migrate(conn: &Connection, from: i64, to: i64) -> Result<(), Error> {
    if from > VERSION {
        return Err(Error::of(
            Kind::Foreign,
            format!(
                "the history file is at schema version {from}, written by a newer status-history \
             (this one knows up to {VERSION}); it is left as it is"
            ),
        ));
    }
    for version in from + 1..=to {
        let sql = usize::try_from(version - 1)
            .ok()
            .and_then(|i| MIGRATIONS.get(i))
            .ok_or_else(|| Error::new(format!("no migration to version {version}")))?;
        conn.execute_batch(&format!(
            "BEGIN; {sql}; PRAGMA user_version = {version}; COMMIT;"
        ))
        .map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            Error::new(format!("migration to version {version} failed: {e}"))
        })?;
    }
    Ok(())
}

/// The schema's migrations, in order (version `i + 1` is the `i`th applied): for tests
/// that build a file at an earlier version.
#[doc(hidden)]
#[must_use]
pub fn migrations() -> &'static [&'static str] {
    MIGRATIONS
}
