//! The reads of [`SqliteStore`]: buckets, tiles, transitions, audit, what the last run left
//! in force.

use rusqlite::{params, OptionalExtension};
use status_core::CheckStatus;

use super::SqliteStore;
use crate::model::{
    millis, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Tier, TransitionRecord,
};
use crate::Error;

impl SqliteStore {
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
    ) -> Result<Vec<Bucket>, Error> {
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
            .map_err(Error::sqlite)?;
        let rows = stmt
            .query_map(
                params![series.kind(), series.name(), tier.code(), from, to],
                |r| bucket_at(r, 0),
            )
            .map_err(Error::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(Error::sqlite)
    }

    /// The day buckets of every series of `kind` from `from` to `to` (Unix seconds), by
    /// series (in name order), oldest first: time in each level only (what tiles show).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn days_of(
        &self,
        kind: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Series, Vec<Bucket>)>, Error> {
        let mut names = self
            .conn
            .prepare_cached("SELECT id, name FROM series WHERE kind = ?1")
            .map_err(Error::sqlite)?;
        let names: std::collections::HashMap<i64, String> = names
            .query_map([kind], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(Error::sqlite)?
            .collect::<Result<_, _>>()
            .map_err(Error::sqlite)?;
        // In the primary key's order: no sort, five columns.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT b.series, b.start, b.ok, b.minor, b.major, b.outage, b.muted
                 FROM buckets b
                 WHERE b.series IN (SELECT id FROM series WHERE kind = ?1)
                   AND b.tier = 2 AND b.start >= ?2 AND b.start < ?3
                 ORDER BY b.series, b.start",
            )
            .map_err(Error::sqlite)?;
        let mut rows = stmt.query(params![kind, from, to]).map_err(Error::sqlite)?;
        let mut out: Vec<(i64, Vec<Bucket>)> = Vec::new();
        while let Some(r) = rows.next().map_err(Error::sqlite)? {
            let u = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0).cast_unsigned());
            let id: i64 = r.get(0).map_err(Error::sqlite)?;
            let bucket = Bucket {
                start: r.get(1).map_err(Error::sqlite)?,
                spent: crate::model::Spent {
                    ok: u(2).map_err(Error::sqlite)?,
                    minor: u(3).map_err(Error::sqlite)?,
                    major: u(4).map_err(Error::sqlite)?,
                    outage: u(5).map_err(Error::sqlite)?,
                    muted: u(6).map_err(Error::sqlite)?,
                },
                ..Bucket::default()
            };
            match out.last_mut() {
                Some((last, buckets)) if *last == id => buckets.push(bucket),
                _ => out.push((id, vec![bucket])),
            }
        }
        let mut named: Vec<(Series, Vec<Bucket>)> = out
            .into_iter()
            .filter_map(|(id, buckets)| {
                let series = Series::from_parts(kind, names.get(&id)?)?;
                Some((series, buckets))
            })
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(named)
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
    ) -> Result<Vec<TransitionRecord>, Error> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT t.at, t.from_level, t.to_level, t.message, t.blocked_by
                 FROM transitions t JOIN series s ON s.id = t.series
                 WHERE s.kind = ?1 AND s.name = ?2 AND t.at >= ?3 AND t.at < ?4
                 ORDER BY t.at DESC, t.id DESC LIMIT ?5",
            )
            .map_err(Error::sqlite)?;
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
            .map_err(Error::sqlite)?
            .collect::<Result<_, _>>()
            .map_err(Error::sqlite)?;
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
    ) -> Result<Vec<(i64, AuditRecord)>, Error> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, at, actor, action, target, reason, address, outcome FROM audit
                 WHERE id < ?1 ORDER BY id DESC LIMIT ?2",
            )
            .map_err(Error::sqlite)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![before.unwrap_or(i64::MAX), limit], |r| {
                Ok((
                    r.get(0)?,
                    AuditRecord {
                        at: millis(r.get(1)?),
                        actor: r.get(2)?,
                        action: r.get(3)?,
                        target: r.get(4)?,
                        reason: r.get(5)?,
                        address: r.get(6)?,
                        outcome: r.get(7)?,
                    },
                ))
            })
            .map_err(Error::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(Error::sqlite)
    }

    /// The mutes kept.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn mutes(&self) -> Result<Vec<MuteRecord>, Error> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT dependency, reason, actor, set_at, start, until FROM mutes
                 ORDER BY dependency",
            )
            .map_err(Error::sqlite)?;
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
            .map_err(Error::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(Error::sqlite)
    }

    /// The overrides kept.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn overrides(&self) -> Result<Vec<OverrideRecord>, Error> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT feature, enabled, reason, actor, set_at, expires_at FROM overrides
                 ORDER BY feature",
            )
            .map_err(Error::sqlite)?;
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
            .map_err(Error::sqlite)?;
        rows.collect::<Result<_, _>>().map_err(Error::sqlite)
    }

    /// The state kept under `key`, as JSON.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn state(&self, key: &str) -> Result<Option<String>, Error> {
        self.conn
            .query_row("SELECT value FROM state WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(Error::sqlite)
    }

    /// Every series kept, of `kind` (`dependency`, `group`, `system`).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn series(&self, kind: &str) -> Result<Vec<Series>, Error> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT kind, name FROM series WHERE kind = ?1 ORDER BY name")
            .map_err(Error::sqlite)?;
        let rows = stmt
            .query_map([kind], |r| {
                let (kind, name): (String, String) = (r.get(0)?, r.get(1)?);
                Ok(Series::from_parts(&kind, &name))
            })
            .map_err(Error::sqlite)?;
        let all: Vec<Option<Series>> = rows.collect::<Result<_, _>>().map_err(Error::sqlite)?;
        Ok(all.into_iter().flatten().collect())
    }

    /// The file's size in bytes, free pages excluded.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn size(&self) -> Result<u64, Error> {
        let page = |p: &str| -> Result<i64, Error> {
            self.conn
                .pragma_query_value(None, p, |r| r.get(0))
                .map_err(Error::sqlite)
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
