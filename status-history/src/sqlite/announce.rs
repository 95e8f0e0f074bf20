//! Maintenances announced to the public, in the SQLite file.

use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::model::{millis, Announcement};
use crate::Error;

/// The most announcements one read answers.
pub(crate) const MAX_ANNOUNCEMENTS: i64 = 200;

const COLUMNS: &str = "id, title, body, dependencies, start, until, created, actor, cancelled";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Announcement> {
    Ok(Announcement {
        id: r.get(0)?,
        title: r.get(1)?,
        body: r.get(2)?,
        dependencies: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
        start: millis(r.get(4)?),
        until: millis(r.get(5)?),
        created: millis(r.get(6)?),
        actor: r.get(7)?,
        cancelled: r.get::<_, Option<i64>>(8)?.map(millis),
    })
}

impl SqliteStore {
    /// Keeps `a` (its id is the store's); answers it with its id.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn announce(&mut self, a: &Announcement) -> Result<Announcement, Error> {
        let dependencies = serde_json::to_string(&a.dependencies).unwrap_or_default();
        self.conn
            .execute(
                "INSERT INTO maintenances (title, body, dependencies, start, until, created, actor)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    a.title,
                    a.body,
                    dependencies,
                    a.start.timestamp_millis(),
                    a.until.timestamp_millis(),
                    a.created.timestamp_millis(),
                    a.actor
                ],
            )
            .map_err(Error::sqlite)?;
        Ok(Announcement {
            id: self.conn.last_insert_rowid(),
            cancelled: None,
            ..a.clone()
        })
    }

    /// The announcements ending at or after `since` (ms), called off or not, the soonest
    /// first, at most 200.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn announcements(&self, since: i64) -> Result<Vec<Announcement>, Error> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM maintenances WHERE until >= ?1
                 ORDER BY start, id LIMIT ?2"
            ))
            .and_then(|mut s| {
                s.query_map(params![since, MAX_ANNOUNCEMENTS], row)?
                    .collect()
            })
            .map_err(Error::sqlite)
    }

    /// Calls off announcement `id` at `at` (ms), if not already; `None` when there is none.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn cancel_announcement(&mut self, id: i64, at: i64) -> Result<Option<Announcement>, Error> {
        self.conn
            .execute(
                "UPDATE maintenances SET cancelled = ?2 WHERE id = ?1 AND cancelled IS NULL",
                params![id, at],
            )
            .map_err(Error::sqlite)?;
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM maintenances WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(Error::sqlite)
    }
}
