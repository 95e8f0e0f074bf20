//! The embedded store: one SQLite file, in WAL mode (a process killed mid-write loses
//! nothing committed), migrated on open, moved aside when corrupt.

mod adapter;
mod schema;

pub use adapter::SqliteHistory;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use status_core::CheckStatus;

use crate::model::{
    millis, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Tier, TransitionRecord,
};
use crate::tally::Batch;
use crate::{Retention, StoreError};

pub(crate) use schema::{MIGRATIONS, VERSION};

/// Everything one write commits at once.
#[derive(Debug, Default, Clone)]
pub struct Writes {
    /// Transitions and aggregates.
    pub batch: Batch,
    /// Audit records, oldest first.
    pub audit: Vec<AuditRecord>,
    /// Every mute kept, when they changed (replacing those stored).
    pub mutes: Option<Vec<MuteRecord>>,
    /// Every override in force, when they changed (replacing those stored).
    pub overrides: Option<Vec<OverrideRecord>>,
    /// Keyed state, as JSON.
    pub state: Vec<(String, String)>,
}

impl Writes {
    /// Whether there is nothing to write.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
            && self.audit.is_empty()
            && self.mutes.is_none()
            && self.overrides.is_none()
            && self.state.is_empty()
    }

    /// Folds later writes in (after a failed write, so that nothing is lost or reordered).
    pub fn absorb(&mut self, later: Writes) {
        self.batch.absorb(later.batch);
        self.audit.extend(later.audit);
        if later.mutes.is_some() {
            self.mutes = later.mutes;
        }
        if later.overrides.is_some() {
            self.overrides = later.overrides;
        }
        for (key, value) in later.state {
            self.state.retain(|(k, _)| *k != key);
            self.state.push((key, value));
        }
    }

    /// Rows it holds: what a bound on a backlog counts.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.batch.transitions.len()
            + self.batch.minutes.len()
            + self.audit.len()
            + self.state.len()
    }
}

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
}

impl SqliteStore {
    /// Opens (creating and migrating) the file at `path`, starting a run at `now` (ms). A
    /// file that is not a database, or fails SQLite's quick check, is moved aside (renamed
    /// `<path>.corrupt-<now>`) and a fresh one started.
    ///
    /// # Errors
    ///
    /// When the file cannot be opened or created (a directory missing or not writable), it
    /// was written by a newer version, or a migration fails.
    pub fn open(path: &Path, now: i64) -> Result<Opened, StoreError> {
        match Self::try_open(Connection::open(path).map_err(StoreError::sqlite), now) {
            Ok(store) => Ok(Opened {
                store,
                moved_aside: None,
            }),
            Err(e) if e.corrupt => {
                let aside = PathBuf::from(format!("{}.corrupt-{now}", path.display()));
                std::fs::rename(path, &aside).map_err(|io| {
                    StoreError::new(format!(
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
                let store =
                    Self::try_open(Connection::open(path).map_err(StoreError::sqlite), now)?;
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
    pub fn in_memory(now: i64) -> Result<Self, StoreError> {
        Self::try_open(
            Connection::open_in_memory().map_err(StoreError::sqlite),
            now,
        )
    }

    fn try_open(conn: Result<Connection, StoreError>, now: i64) -> Result<Self, StoreError> {
        let conn = conn?;
        conn.busy_timeout(Duration::from_millis(250))
            .map_err(StoreError::sqlite)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(StoreError::sqlite)?;
        if version == 0 {
            // Before any table: freed pages go back to the file system after a prune.
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")
                .map_err(StoreError::sqlite)?;
        }
        let _: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
            .map_err(StoreError::sqlite)?;
        // With WAL, NORMAL loses nothing committed when the process dies; only a power loss
        // may take the last transactions.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(StoreError::sqlite)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(StoreError::sqlite)?;
        if check != "ok" {
            return Err(StoreError::corrupt(check));
        }
        migrate(&conn, version, VERSION)?;
        conn.execute(
            "INSERT INTO runs (started, covered_until) VALUES (?1, ?1)",
            [now],
        )
        .map_err(StoreError::sqlite)?;
        let run = conn.last_insert_rowid();
        Ok(Self {
            conn,
            series: HashMap::new(),
            run,
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
    pub fn write(&mut self, writes: &Writes) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(StoreError::sqlite)?;
        let mut series = self.series.clone();
        write_all(&tx, &mut series, self.run, writes).map_err(StoreError::sqlite)?;
        tx.commit().map_err(StoreError::sqlite)?;
        self.series = series;
        Ok(())
    }

    /// The buckets of `series` in `tier` from `from` to `to` (Unix seconds, `to` excluded),
    /// oldest first.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn buckets(
        &self,
        series: &Series,
        tier: Tier,
        from: i64,
        to: i64,
    ) -> Result<Vec<Bucket>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT b.start, b.ok, b.minor, b.major, b.outage, b.muted, b.checks,
                        b.failures, b.dmin, b.dsum, b.dmax
                 FROM buckets b JOIN series s ON s.id = b.series
                 WHERE s.kind = ?1 AND s.name = ?2 AND b.tier = ?3
                   AND b.start >= ?4 AND b.start < ?5
                 ORDER BY b.start",
            )
            .map_err(StoreError::sqlite)?;
        let rows = stmt
            .query_map(
                params![series.kind(), series.name(), tier.code(), from, to],
                |r| bucket_at(r, 0),
            )
            .map_err(StoreError::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite)
    }

    /// The day buckets of every series of `kind` from `from` to `to` (Unix seconds), by
    /// series, oldest first.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn days_of(
        &self,
        kind: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Series, Bucket)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.name, b.start, b.ok, b.minor, b.major, b.outage, b.muted, b.checks,
                        b.failures, b.dmin, b.dsum, b.dmax
                 FROM buckets b JOIN series s ON s.id = b.series
                 WHERE s.kind = ?1 AND b.tier = 2 AND b.start >= ?2 AND b.start < ?3
                 ORDER BY s.name, b.start",
            )
            .map_err(StoreError::sqlite)?;
        let rows = stmt
            .query_map(params![kind, from, to], |r| {
                let name: String = r.get(0)?;
                Ok((name, bucket_at(r, 1)?))
            })
            .map_err(StoreError::sqlite)?;
        let mut out = Vec::new();
        for row in rows {
            let (name, bucket) = row.map_err(StoreError::sqlite)?;
            if let Some(series) = Series::from_parts(kind, &name) {
                out.push((series, bucket));
            }
        }
        Ok(out)
    }

    /// The transitions of `series` from `from` to `to` (ms, `to` excluded), the latest
    /// `limit`, oldest first.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn transitions(
        &self,
        series: &Series,
        from: i64,
        to: i64,
        limit: usize,
    ) -> Result<Vec<TransitionRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT t.at, t.from_level, t.to_level, t.message, t.blocked_by
                 FROM transitions t JOIN series s ON s.id = t.series
                 WHERE s.kind = ?1 AND s.name = ?2 AND t.at >= ?3 AND t.at < ?4
                 ORDER BY t.at DESC, t.id DESC LIMIT ?5",
            )
            .map_err(StoreError::sqlite)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut rows: Vec<TransitionRecord> = stmt
            .query_map(
                params![series.kind(), series.name(), from, to, limit],
                |r| {
                    let level = |v: Option<i64>| {
                        v.and_then(|v| u8::try_from(v).ok())
                            .and_then(CheckStatus::from_severity)
                    };
                    let blocked: String = r.get(4)?;
                    Ok(TransitionRecord {
                        series: series.clone(),
                        at: r.get(0)?,
                        from: level(r.get(1)?),
                        to: level(r.get(2)?).unwrap_or(CheckStatus::Outage),
                        message: r.get(3)?,
                        blocked_by: serde_json::from_str(&blocked).unwrap_or_default(),
                    })
                },
            )
            .map_err(StoreError::sqlite)?
            .collect::<Result<_, _>>()
            .map_err(StoreError::sqlite)?;
        rows.reverse();
        Ok(rows)
    }

    /// The latest `limit` audit records before the record `before` (all with `None`),
    /// newest first, with their ids.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn audit(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, AuditRecord)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, at, actor, action, target, reason, address, outcome FROM audit
                 WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(StoreError::sqlite)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![before.unwrap_or(i64::MAX), limit], |r| {
                Ok((
                    r.get(0)?,
                    AuditRecord {
                        at: r.get(1)?,
                        actor: r.get(2)?,
                        action: r.get(3)?,
                        target: r.get(4)?,
                        reason: r.get(5)?,
                        address: r.get(6)?,
                        outcome: r.get(7)?,
                    },
                ))
            })
            .map_err(StoreError::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite)
    }

    /// The mutes kept.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn mutes(&self) -> Result<Vec<MuteRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT dependency, reason, actor, set_at, start, until FROM mutes
                 ORDER BY dependency",
            )
            .map_err(StoreError::sqlite)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(MuteRecord {
                    dependency: r.get(0)?,
                    reason: r.get(1)?,
                    actor: r.get(2)?,
                    set_at: millis(r.get(3)?),
                    start: millis(r.get(4)?),
                    until: millis(r.get(5)?),
                })
            })
            .map_err(StoreError::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite)
    }

    /// The overrides kept.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn overrides(&self) -> Result<Vec<OverrideRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT feature, enabled, reason, actor, set_at, expires_at FROM overrides
                 ORDER BY feature",
            )
            .map_err(StoreError::sqlite)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(OverrideRecord {
                    feature: r.get(0)?,
                    enabled: r.get(1)?,
                    reason: r.get(2)?,
                    actor: r.get(3)?,
                    set_at: millis(r.get(4)?),
                    expires_at: millis(r.get(5)?),
                })
            })
            .map_err(StoreError::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(StoreError::sqlite)
    }

    /// The state kept under `key`, as JSON.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn state(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT value FROM state WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(StoreError::sqlite)
    }

    /// Every series kept, of `kind` (`dependency`, `group`, `system`).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn series(&self, kind: &str) -> Result<Vec<Series>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT kind, name FROM series WHERE kind = ?1 ORDER BY name")
            .map_err(StoreError::sqlite)?;
        let rows = stmt
            .query_map([kind], |r| {
                let (kind, name): (String, String) = (r.get(0)?, r.get(1)?);
                Ok(Series::from_parts(&kind, &name))
            })
            .map_err(StoreError::sqlite)?;
        let all: Vec<Option<Series>> =
            rows.collect::<Result<_, _>>().map_err(StoreError::sqlite)?;
        Ok(all.into_iter().flatten().collect())
    }

    /// Deletes what `retention` no longer keeps at `now` (ms), oldest first, then, while
    /// the file is over its size bound, the oldest tenth of transitions and audit; answers
    /// the rows deleted.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn prune(&mut self, now: i64, retention: &Retention) -> Result<u64, StoreError> {
        let ms = |d: Duration| now - i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2);
        let mut deleted = 0u64;
        let tx = self.conn.transaction().map_err(StoreError::sqlite)?;
        for (tier, kept) in [
            (Tier::Minute, retention.minutes),
            (Tier::Hour, retention.hours),
            (Tier::Day, retention.days),
        ] {
            deleted += count(tx.execute(
                "DELETE FROM buckets WHERE tier = ?1 AND start < ?2",
                params![tier.code(), ms(kept) / 1000],
            ))?;
        }
        deleted += count(tx.execute(
            "DELETE FROM transitions WHERE at < ?1",
            [ms(retention.transitions)],
        ))?;
        deleted += count(tx.execute("DELETE FROM audit WHERE at < ?1", [ms(retention.audit)]))?;
        deleted += count(tx.execute(
            "DELETE FROM runs WHERE covered_until < ?1 AND id <> ?2",
            params![ms(retention.transitions), self.run],
        ))?;
        deleted += count(tx.execute("DELETE FROM mutes WHERE until < ?1", [now]))?;
        deleted += count(tx.execute("DELETE FROM overrides WHERE expires_at < ?1", [now]))?;
        tx.commit().map_err(StoreError::sqlite)?;
        for _ in 0..8 {
            if self.size()? <= retention.max_bytes {
                break;
            }
            let tx = self.conn.transaction().map_err(StoreError::sqlite)?;
            for table in ["transitions", "audit"] {
                deleted += count(tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE id <= (SELECT min(id) + (max(id) - min(id)) / 10 FROM {table})"
                    ),
                    [],
                ))?;
            }
            tx.commit().map_err(StoreError::sqlite)?;
            self.conn
                .execute_batch("PRAGMA incremental_vacuum")
                .map_err(StoreError::sqlite)?;
            tracing::warn!(
                max_bytes = retention.max_bytes,
                "the history is over its size bound: the oldest transitions and audit records were deleted"
            );
        }
        self.conn
            .execute_batch("PRAGMA incremental_vacuum")
            .map_err(StoreError::sqlite)?;
        Ok(deleted)
    }

    /// The file's size in bytes, free pages excluded.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn size(&self) -> Result<u64, StoreError> {
        let page = |p: &str| -> Result<i64, StoreError> {
            self.conn
                .pragma_query_value(None, p, |r| r.get(0))
                .map_err(StoreError::sqlite)
        };
        let used = page("page_count")? - page("freelist_count")?;
        Ok((used.max(0) * page("page_size")?).cast_unsigned())
    }
}

/// The bucket whose columns start at `first` in `r`: start, the five spans, checks,
/// failures and the three durations.
fn bucket_at(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Bucket> {
    let u = |i: usize| r.get::<_, i64>(first + i).map(|v| v.max(0).cast_unsigned());
    Ok(Bucket {
        start: r.get(first)?,
        spent: crate::model::Spent {
            ok: u(1)?,
            minor: u(2)?,
            major: u(3)?,
            outage: u(4)?,
            muted: u(5)?,
        },
        checks: u(6)?,
        failures: u(7)?,
        duration_min_us: u(8)?,
        duration_sum_us: u(9)?,
        duration_max_us: u(10)?,
    })
}

fn count(r: rusqlite::Result<usize>) -> Result<u64, StoreError> {
    r.map(|n| n as u64).map_err(StoreError::sqlite)
}

/// Applies the migrations after `from` up to `to`, each in a transaction.
pub(crate) fn migrate(conn: &Connection, from: i64, to: i64) -> Result<(), StoreError> {
    if from > VERSION {
        return Err(StoreError::new(format!(
            "the history file is at schema version {from}, written by a newer status-history \
             (this one knows up to {VERSION}); it is left as it is"
        )));
    }
    for version in from + 1..=to {
        let sql = usize::try_from(version - 1)
            .ok()
            .and_then(|i| MIGRATIONS.get(i))
            .ok_or_else(|| StoreError::new(format!("no migration to version {version}")))?;
        conn.execute_batch(&format!(
            "BEGIN; {sql}; PRAGMA user_version = {version}; COMMIT;"
        ))
        .map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            StoreError::new(format!("migration to version {version} failed: {e}"))
        })?;
    }
    Ok(())
}

fn series_id(
    tx: &Transaction<'_>,
    known: &mut HashMap<Series, i64>,
    series: &Series,
) -> rusqlite::Result<i64> {
    if let Some(id) = known.get(series) {
        return Ok(*id);
    }
    tx.execute(
        "INSERT INTO series (kind, name) VALUES (?1, ?2) ON CONFLICT (kind, name) DO NOTHING",
        params![series.kind(), series.name()],
    )?;
    let id = tx.query_row(
        "SELECT id FROM series WHERE kind = ?1 AND name = ?2",
        params![series.kind(), series.name()],
        |r| r.get(0),
    )?;
    known.insert(series.clone(), id);
    Ok(id)
}

/// Recomputes the bucket of `tier` starting at `start` from the finer tier's buckets.
const ROLL_UP: &str = "INSERT INTO buckets
      (series, tier, start, ok, minor, major, outage, muted, checks, failures, dmin, dsum, dmax)
    SELECT ?1, ?2, ?3, sum(ok), sum(minor), sum(major), sum(outage), sum(muted), sum(checks),
           sum(failures), coalesce(min(CASE WHEN checks > 0 THEN dmin END), 0), sum(dsum),
           max(dmax)
    FROM buckets WHERE series = ?1 AND tier = ?4 AND start >= ?3 AND start < ?5
    GROUP BY series
    ON CONFLICT (series, tier, start) DO UPDATE SET
      ok = excluded.ok, minor = excluded.minor, major = excluded.major,
      outage = excluded.outage, muted = excluded.muted, checks = excluded.checks,
      failures = excluded.failures, dmin = excluded.dmin, dsum = excluded.dsum,
      dmax = excluded.dmax";

#[allow(clippy::cast_possible_wrap)] // counts and ms far below 2^63
fn write_all(
    tx: &Transaction<'_>,
    known: &mut HashMap<Series, i64>,
    run: i64,
    w: &Writes,
) -> rusqlite::Result<()> {
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO transitions (series, run, at, from_level, to_level, message, blocked_by)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for t in &w.batch.transitions {
            let id = series_id(tx, known, &t.series)?;
            insert.execute(params![
                id,
                run,
                t.at,
                t.from.map(|l| i64::from(l.severity())),
                i64::from(t.to.severity()),
                t.message,
                serde_json::to_string(&t.blocked_by).unwrap_or_else(|_| "[]".into()),
            ])?;
        }
    }
    let mut touched: BTreeSet<(i64, Tier, i64)> = BTreeSet::new();
    {
        let mut upsert = tx.prepare_cached(
            "INSERT INTO buckets
               (series, tier, start, ok, minor, major, outage, muted, checks, failures,
                dmin, dsum, dmax)
             VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (series, tier, start) DO UPDATE SET
               ok = excluded.ok, minor = excluded.minor, major = excluded.major,
               outage = excluded.outage, muted = excluded.muted, checks = excluded.checks,
               failures = excluded.failures, dmin = excluded.dmin, dsum = excluded.dsum,
               dmax = excluded.dmax",
        )?;
        for (series, b) in &w.batch.minutes {
            let id = series_id(tx, known, series)?;
            let s = b.spent;
            upsert.execute(params![
                id,
                b.start,
                s.ok as i64,
                s.minor as i64,
                s.major as i64,
                s.outage as i64,
                s.muted as i64,
                b.checks as i64,
                b.failures as i64,
                b.duration_min_us as i64,
                b.duration_sum_us as i64,
                b.duration_max_us as i64,
            ])?;
            let at = b.start_time();
            touched.insert((id, Tier::Hour, Tier::Hour.floor(at).timestamp()));
            touched.insert((id, Tier::Day, Tier::Day.floor(at).timestamp()));
        }
    }
    {
        let mut roll = tx.prepare_cached(ROLL_UP)?;
        // Hours before days: a day sums the hours just recomputed.
        for tier in [Tier::Hour, Tier::Day] {
            let finer = if tier == Tier::Hour {
                Tier::Minute
            } else {
                Tier::Hour
            };
            for (id, _, start) in touched.iter().filter(|(_, t, _)| *t == tier) {
                roll.execute(params![
                    id,
                    tier.code(),
                    start,
                    finer.code(),
                    start + tier.length().num_seconds()
                ])?;
            }
        }
    }
    if let Some(until) = w.batch.covered_until {
        tx.execute(
            "UPDATE runs SET covered_until = ?1 WHERE id = ?2",
            params![until, run],
        )?;
    }
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO audit (at, actor, action, target, reason, address, outcome)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for a in &w.audit {
            insert.execute(params![
                a.at, a.actor, a.action, a.target, a.reason, a.address, a.outcome
            ])?;
        }
    }
    if let Some(mutes) = &w.mutes {
        tx.execute("DELETE FROM mutes", [])?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO mutes (dependency, reason, actor, set_at, start, until)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for m in mutes {
            insert.execute(params![
                m.dependency,
                m.reason,
                m.actor,
                m.set_at.timestamp_millis(),
                m.start.timestamp_millis(),
                m.until.timestamp_millis()
            ])?;
        }
    }
    if let Some(overrides) = &w.overrides {
        tx.execute("DELETE FROM overrides", [])?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO overrides (feature, enabled, reason, actor, set_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for o in overrides {
            insert.execute(params![
                o.feature,
                o.enabled,
                o.reason,
                o.actor,
                o.set_at.timestamp_millis(),
                o.expires_at.timestamp_millis()
            ])?;
        }
    }
    let now = w.batch.covered_until.unwrap_or_default();
    for (key, value) in &w.state {
        tx.execute(
            "INSERT INTO state (key, value, updated) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
            params![key, value, now],
        )?;
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
