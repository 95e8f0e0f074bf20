//! The writes of [`SqliteStore`]: one transaction of [`Writes`], increments added to minutes,
//! hours and days, and pruning by age and size.

use std::collections::HashMap;
use std::time::Duration;

use rusqlite::{params, Transaction};

use super::SqliteStore;
use crate::model::{Series, Tier};
use crate::{Error, Retention, Writes};

impl SqliteStore {
    /// Deletes what `retention` no longer keeps at `now` (ms), oldest first, then, while
    /// the file is over its size bound, the oldest tenth of transitions and audit; answers
    /// the rows deleted.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn prune(&mut self, now: i64, retention: &Retention) -> Result<u64, Error> {
        let ms = |d: Duration| now - i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2);
        let mut deleted = 0u64;
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
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
        // Incidents are kept as long as the audit trail that speaks of them.
        for table in ["incident_updates", "incident_postmortems"] {
            deleted += count(tx.execute(
                &format!(
                    "DELETE FROM {table} WHERE incident IN
                       (SELECT id FROM incidents WHERE resolved < ?1)"
                ),
                [ms(retention.audit)],
            ))?;
        }
        deleted += count(tx.execute(
            "DELETE FROM incidents WHERE resolved < ?1",
            [ms(retention.audit)],
        ))?;
        deleted += count(tx.execute(
            "DELETE FROM maintenances WHERE until < ?1",
            [ms(retention.audit)],
        ))?;
        // What was sent, and addresses never confirmed, are kept two days.
        let stale = ms(crate::model::SUBSCRIPTIONS_PRUNED_AFTER);
        deleted += count(tx.execute("DELETE FROM deliveries WHERE at < ?1", [stale]))?;
        deleted += count(tx.execute(
            "DELETE FROM subscribers WHERE confirmed IS NULL AND created < ?1",
            [stale],
        ))?;
        deleted += count(tx.execute(
            "DELETE FROM runs WHERE covered_until < ?1 AND id <> ?2",
            params![ms(retention.transitions), self.run],
        ))?;
        deleted += count(tx.execute("DELETE FROM mutes WHERE until < ?1", [now]))?;
        deleted += count(tx.execute("DELETE FROM overrides WHERE expires_at < ?1", [now]))?;
        tx.commit().map_err(Error::sqlite)?;
        for _ in 0..8 {
            if self.size()? <= retention.max_bytes {
                break;
            }
            let tx = self.conn.transaction().map_err(Error::sqlite)?;
            for table in ["transitions", "audit"] {
                deleted += count(tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE id <= (SELECT min(id) + (max(id) - min(id)) / 10 FROM {table})"
                    ),
                    [],
                ))?;
            }
            tx.commit().map_err(Error::sqlite)?;
            self.conn
                .execute_batch("PRAGMA incremental_vacuum")
                .map_err(Error::sqlite)?;
            tracing::warn!(
                max_bytes = retention.max_bytes,
                "the history is over its size bound: the oldest transitions and audit records were deleted"
            );
        }
        self.conn
            .execute_batch("PRAGMA incremental_vacuum")
            .map_err(Error::sqlite)?;
        Ok(deleted)
    }
}

fn count(r: rusqlite::Result<usize>) -> Result<u64, Error> {
    r.map(|n| n as u64).map_err(Error::sqlite)
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

#[allow(clippy::cast_possible_wrap)] // counts and ms far below 2^63
pub(super) fn write_all(
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
    super::incidents::write_facts(tx, &w.incidents, w.incident_quiet, w.now)?;
    {
        // Each minute's increment, and its sum in the hour and the day that hold it, added
        // to what is kept: a run never writes over another's time.
        let mut upsert = tx.prepare_cached(concat!(
            "INSERT INTO buckets
               (series, tier, start, ok, minor, major, outage, muted, checks, failures,
                dmin, dsum, dmax)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
             ON CONFLICT (series, tier, start) DO UPDATE SET ",
            add_totals!("buckets", "min", "max")
        ))?;
        for ((series, tier, start), b) in &w.batch.tiers() {
            let id = series_id(tx, known, series)?;
            let s = b.spent;
            upsert.execute(params![
                id,
                tier.code(),
                start,
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
                a.at.timestamp_millis(),
                a.actor,
                a.action,
                a.target,
                a.reason,
                a.address,
                a.outcome
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
