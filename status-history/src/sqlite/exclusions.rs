//! Exclusions, in the SQLite file.

use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::exclusion::Exclusion;
use crate::model::{millis, Series};
use crate::Error;

/// The most exclusions kept.
pub(crate) const MAX_EXCLUSIONS: i64 = 1_000;

const COLUMNS: &str = "id, kind, name, start, until, reason, actor, created, amounts";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<Exclusion>> {
    let kind: String = r.get(1)?;
    let name: String = r.get(2)?;
    Ok(Series::from_parts(&kind, &name).map(|series| Exclusion {
        id: r.get(0).unwrap_or_default(),
        series,
        from: millis(r.get(3).unwrap_or_default()),
        to: millis(r.get(4).unwrap_or_default()),
        reason: r.get(5).unwrap_or_default(),
        actor: r.get(6).unwrap_or_default(),
        created: millis(r.get(7).unwrap_or_default()),
        amounts: Exclusion::amounts_from_json(&r.get::<_, String>(8).unwrap_or_default()),
    }))
}

impl SqliteStore {
    /// Keeps `e` (its id is the store's); answers it with its id.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn exclude(&mut self, e: &Exclusion) -> Result<Exclusion, Error> {
        self.conn
            .execute(
                "INSERT INTO exclusions (kind, name, start, until, reason, actor, created, amounts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    e.series.kind(),
                    e.series.name(),
                    e.from.timestamp_millis(),
                    e.to.timestamp_millis(),
                    e.reason,
                    e.actor,
                    e.created.timestamp_millis(),
                    e.amounts_json()
                ],
            )
            .map_err(Error::sqlite)?;
        Ok(Exclusion {
            id: self.conn.last_insert_rowid(),
            ..e.clone()
        })
    }

    /// Every exclusion kept, the oldest window first (at most 1,000).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn exclusions(&self) -> Result<Vec<Exclusion>, Error> {
        let rows: Vec<Option<Exclusion>> = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM exclusions ORDER BY start, id LIMIT ?1"
            ))
            .and_then(|mut s| s.query_map([MAX_EXCLUSIONS], row)?.collect())
            .map_err(Error::sqlite)?;
        Ok(rows.into_iter().flatten().collect())
    }

    /// Removes exclusion `id`; answers it, or `None` when there is none.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn remove_exclusion(&mut self, id: i64) -> Result<Option<Exclusion>, Error> {
        let found = self
            .conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM exclusions WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(Error::sqlite)?
            .flatten();
        self.conn
            .execute("DELETE FROM exclusions WHERE id = ?1", [id])
            .map_err(Error::sqlite)?;
        Ok(found)
    }
}
