//! Incidents in the SQLite file: the tracker's facts merged in, operators' updates, reads.

use rusqlite::{params, OptionalExtension, Transaction};

use super::SqliteStore;
use crate::incident::codec::{self, Row};
use crate::incident::{
    merge, sweep, Incident, IncidentFact, IncidentUpdate, Merged, NewPostmortem, NewUpdate,
    Postmortem, UpdateKind,
};
use crate::Error;

/// The one instance a file is written by.
const INSTANCE: &str = "local";

const COLUMNS: &str = "id, title, roots, affected, impact, started, resolved, updated, members";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok(Row {
        id: r.get(0)?,
        title: r.get(1)?,
        roots: r.get(2)?,
        affected: r.get(3)?,
        impact: r.get(4)?,
        started: r.get(5)?,
        resolved: r.get(6)?,
        updated: r.get(7)?,
        members: r.get(8)?,
    })
}

/// Merges each fact into the incidents kept (see [`merge`]).
pub(super) fn write_facts(
    tx: &Transaction<'_>,
    facts: &[IncidentFact],
    quiet: i64,
    now: i64,
) -> rusqlite::Result<()> {
    for fact in facts {
        let candidates: Vec<_> = tx
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM incidents WHERE resolved IS NULL OR updated >= ?1"
            ))?
            .query_map([fact.at.saturating_sub(quiet)], row)?
            .map(|r| r.map(|r| r.stored()))
            .collect::<Result<_, _>>()?;
        match merge(&candidates, fact, INSTANCE, quiet) {
            Merged::Insert(incident, status, message) => {
                let r = Row::of(&incident);
                tx.execute(
                    "INSERT INTO incidents
                       (title, roots, affected, impact, started, resolved, updated, members)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        r.title, r.roots, r.affected, r.impact, r.started, r.resolved, r.updated,
                        r.members
                    ],
                )?;
                let id = tx.last_insert_rowid();
                insert_update(
                    tx,
                    id,
                    fact.at,
                    status.as_str(),
                    &message,
                    None,
                    UpdateKind::Opened,
                )?;
            }
            Merged::Update(incident, update) => {
                let r = Row::of(&incident);
                tx.execute(
                    "UPDATE incidents SET title = ?2, roots = ?3, affected = ?4, impact = ?5,
                       started = ?6, resolved = ?7, updated = ?8, members = ?9 WHERE id = ?1",
                    params![
                        r.id, r.title, r.roots, r.affected, r.impact, r.started, r.resolved,
                        r.updated, r.members
                    ],
                )?;
                if let Some((status, kind, message)) = update {
                    insert_update(tx, r.id, fact.at, status.as_str(), &message, None, kind)?;
                }
            }
            Merged::Nothing => {}
        }
    }
    if now > 0 {
        let open: Vec<_> = tx
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM incidents WHERE resolved IS NULL"
            ))?
            .query_map([], row)?
            .map(|r| r.map(|r| r.stored()))
            .collect::<Result<_, _>>()?;
        for incident in &open {
            if let Some((next, status, message)) = sweep(incident, now) {
                let r = Row::of(&next);
                tx.execute(
                    "UPDATE incidents SET resolved = ?2, updated = ?3 WHERE id = ?1",
                    params![r.id, r.resolved, r.updated],
                )?;
                insert_update(
                    tx,
                    r.id,
                    now,
                    status.as_str(),
                    &message,
                    None,
                    UpdateKind::Resolved,
                )?;
            }
        }
    }
    Ok(())
}

fn insert_update(
    tx: &Transaction<'_>,
    incident: i64,
    at: i64,
    status: &str,
    message: &str,
    actor: Option<&str>,
    kind: UpdateKind,
) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO incident_updates (incident, at, status, message, actor, kind)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![incident, at, status, message, actor, kind.as_str()],
    )?;
    Ok(tx.last_insert_rowid())
}

impl SqliteStore {
    /// The incidents open, and those that resolved at or after `since` (ms), the latest
    /// started first, at most `limit`, each with its updates.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn incidents(&self, since: i64, limit: usize) -> Result<Vec<Incident>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<Row> = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM incidents WHERE resolved IS NULL OR resolved >= ?1
                 ORDER BY started DESC, id DESC LIMIT ?2"
            ))
            .and_then(|mut s| {
                s.query_map(params![since, limit], row)?
                    .collect::<Result<_, _>>()
            })
            .map_err(Error::sqlite)?;
        rows.into_iter().map(|r| self.whole(&r)).collect()
    }

    /// The incident `id`, if kept.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn incident(&self, id: i64) -> Result<Option<Incident>, Error> {
        let found = self
            .conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM incidents WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(Error::sqlite)?;
        found.map(|r| self.whole(&r)).transpose()
    }

    /// The incident of `row`, with its updates and postmortem.
    fn whole(&self, row: &Row) -> Result<Incident, Error> {
        let mut incident = row.incident(self.updates(row.id)?);
        incident.postmortem = self
            .conn
            .prepare_cached("SELECT body, at, actor FROM incident_postmortems WHERE incident = ?1")
            .and_then(|mut s| {
                s.query_row([row.id], |r| {
                    Ok(Postmortem {
                        body: r.get(0)?,
                        at: r.get(1)?,
                        actor: r.get(2)?,
                    })
                })
                .optional()
            })
            .map_err(Error::sqlite)?;
        Ok(incident)
    }

    /// Publishes `p` as its incident's postmortem, replacing any; `None` when there is no
    /// such incident (nothing is written).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn set_postmortem(&mut self, p: &NewPostmortem) -> Result<Option<Postmortem>, Error> {
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
        let exists = tx
            .query_row(
                "SELECT 1 FROM incidents WHERE id = ?1",
                [p.incident],
                |_| Ok(()),
            )
            .optional()
            .map_err(Error::sqlite)?;
        if exists.is_none() {
            return Ok(None);
        }
        let m = &p.postmortem;
        tx.execute(
            "INSERT INTO incident_postmortems (incident, body, at, actor) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (incident) DO UPDATE SET body = ?2, at = ?3, actor = ?4",
            params![p.incident, m.body, m.at, m.actor],
        )
        .map_err(Error::sqlite)?;
        tx.commit().map_err(Error::sqlite)?;
        Ok(Some(m.clone()))
    }

    fn updates(&self, incident: i64) -> Result<Vec<IncidentUpdate>, Error> {
        self.conn
            .prepare_cached(
                "SELECT id, at, status, message, actor, kind FROM incident_updates
                 WHERE incident = ?1 ORDER BY at, id",
            )
            .and_then(|mut s| {
                s.query_map([incident], |r| {
                    Ok(IncidentUpdate {
                        id: r.get(0)?,
                        at: r.get(1)?,
                        status: codec::status(&r.get::<_, String>(2)?),
                        message: r.get(3)?,
                        actor: r.get(4)?,
                        kind: UpdateKind::parse(&r.get::<_, String>(5)?),
                    })
                })?
                .collect()
            })
            .map_err(Error::sqlite)
    }

    /// Posts an operator's update; `resolved` resolves the incident (and a later failure of
    /// its roots opens a new one, or reopens it within the quiet time). Answers the update,
    /// or `None` when there is no such incident (nothing is written then).
    ///
    /// # Errors
    ///
    /// When SQLite fails; nothing is written then.
    pub fn post_update(&mut self, update: &NewUpdate) -> Result<Option<IncidentUpdate>, Error> {
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
        let posted = post(&tx, update).map_err(Error::sqlite)?;
        tx.commit().map_err(Error::sqlite)?;
        Ok(posted)
    }
}

fn post(tx: &Transaction<'_>, u: &NewUpdate) -> rusqlite::Result<Option<IncidentUpdate>> {
    let exists: Option<Option<i64>> = tx
        .query_row(
            "SELECT resolved FROM incidents WHERE id = ?1",
            [u.incident],
            |r| r.get(0),
        )
        .optional()?;
    let Some(resolved) = exists else {
        return Ok(None);
    };
    let resolves = u.status == crate::incident::UpdateStatus::Resolved && resolved.is_none();
    tx.execute(
        "UPDATE incidents SET updated = ?2, resolved = CASE WHEN ?3 THEN ?2 ELSE resolved END
         WHERE id = ?1",
        params![u.incident, u.at, resolves],
    )?;
    let id = insert_update(
        tx,
        u.incident,
        u.at,
        u.status.as_str(),
        &u.message,
        u.actor.as_deref(),
        UpdateKind::Operator,
    )?;
    Ok(Some(IncidentUpdate {
        id,
        at: u.at,
        status: u.status,
        message: u.message.clone(),
        actor: u.actor.clone(),
        kind: UpdateKind::Operator,
    }))
}
