//! Incidents in PostgreSQL, shared by the fleet: each instance's facts merged under one
//! advisory lock, operators' updates, reads.

use tokio_postgres::{GenericClient, Transaction};

use super::schema::INCIDENT_LOCK;
use super::PostgresHistory;
use crate::incident::codec::{self, Row};
use crate::incident::{
    merge, sweep, Incident, IncidentFact, IncidentUpdate, Merged, NewPostmortem, NewUpdate,
    Postmortem, UpdateKind, UpdateStatus,
};
use crate::Error;

const COLUMNS: &str = "id, title, roots, affected, impact, started, resolved, updated, members";

fn row(r: &tokio_postgres::Row) -> Row {
    Row {
        id: r.get(0),
        title: r.get(1),
        roots: r.get(2),
        affected: r.get(3),
        impact: r.get(4),
        started: r.get(5),
        resolved: r.get(6),
        updated: r.get(7),
        members: r.get(8),
    }
}

/// Merges each fact into the fleet's incidents, as `instance`.
pub(super) async fn write_facts(
    tx: &Transaction<'_>,
    facts: &[IncidentFact],
    instance: &str,
    quiet: i64,
    now: i64,
) -> Result<(), tokio_postgres::Error> {
    if facts.is_empty() {
        // Nothing said: a sweep, under the lock only while some incident is open.
        let open = now > 0
            && tx
                .query_opt(
                    "SELECT 1 FROM sh_incidents WHERE resolved IS NULL LIMIT 1",
                    &[],
                )
                .await?
                .is_some();
        if !open {
            return Ok(());
        }
    }
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&INCIDENT_LOCK])
        .await?;
    for fact in facts {
        let candidates: Vec<_> = tx
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM sh_incidents WHERE resolved IS NULL OR updated >= $1"
                ),
                &[&fact.at.saturating_sub(quiet)],
            )
            .await?
            .iter()
            .map(|r| row(r).stored())
            .collect();
        match merge(&candidates, fact, instance, quiet) {
            Merged::Insert(incident, status, message) => {
                let r = Row::of(&incident);
                let id: i64 = tx
                    .query_one(
                        "INSERT INTO sh_incidents
                           (title, roots, affected, impact, started, resolved, updated, members)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                        &[
                            &r.title,
                            &r.roots,
                            &r.affected,
                            &r.impact,
                            &r.started,
                            &r.resolved,
                            &r.updated,
                            &r.members,
                        ],
                    )
                    .await?
                    .get(0);
                insert_update(
                    tx,
                    id,
                    fact.at,
                    status.as_str(),
                    &message,
                    None,
                    UpdateKind::Opened,
                )
                .await?;
            }
            Merged::Update(incident, update) => {
                let r = Row::of(&incident);
                tx.execute(
                    "UPDATE sh_incidents SET title = $2, roots = $3, affected = $4, impact = $5,
                       started = $6, resolved = $7, updated = $8, members = $9 WHERE id = $1",
                    &[
                        &r.id,
                        &r.title,
                        &r.roots,
                        &r.affected,
                        &r.impact,
                        &r.started,
                        &r.resolved,
                        &r.updated,
                        &r.members,
                    ],
                )
                .await?;
                if let Some((status, kind, message)) = update {
                    insert_update(tx, r.id, fact.at, status.as_str(), &message, None, kind).await?;
                }
            }
            Merged::Nothing => {}
        }
    }
    if now > 0 {
        let open: Vec<_> = tx
            .query(
                &format!("SELECT {COLUMNS} FROM sh_incidents WHERE resolved IS NULL"),
                &[],
            )
            .await?
            .iter()
            .map(|r| row(r).stored())
            .collect();
        for incident in &open {
            if let Some((next, status, message)) = sweep(incident, now) {
                let r = Row::of(&next);
                tx.execute(
                    "UPDATE sh_incidents SET resolved = $2, updated = $3 WHERE id = $1",
                    &[&r.id, &r.resolved, &r.updated],
                )
                .await?;
                insert_update(
                    tx,
                    r.id,
                    now,
                    status.as_str(),
                    &message,
                    None,
                    UpdateKind::Resolved,
                )
                .await?;
            }
        }
    }
    Ok(())
}

async fn insert_update(
    client: &impl GenericClient,
    incident: i64,
    at: i64,
    status: &str,
    message: &str,
    actor: Option<&str>,
    kind: UpdateKind,
) -> Result<i64, tokio_postgres::Error> {
    Ok(client
        .query_one(
            "INSERT INTO sh_incident_updates (incident, at, status, message, actor, kind)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            &[&incident, &at, &status, &message, &actor, &kind.as_str()],
        )
        .await?
        .get(0))
}

async fn updates(
    client: &impl GenericClient,
    incident: i64,
) -> Result<Vec<IncidentUpdate>, tokio_postgres::Error> {
    Ok(client
        .query(
            "SELECT id, at, status, message, actor, kind FROM sh_incident_updates
             WHERE incident = $1 ORDER BY at, id",
            &[&incident],
        )
        .await?
        .iter()
        .map(|r| IncidentUpdate {
            id: r.get(0),
            at: r.get(1),
            status: codec::status(r.get(2)),
            message: r.get(3),
            actor: r.get(4),
            kind: UpdateKind::parse(r.get(5)),
        })
        .collect())
}

/// The incident of `row`, with its updates and postmortem.
async fn whole(client: &impl GenericClient, row: &Row) -> Result<Incident, tokio_postgres::Error> {
    let mut incident = row.incident(updates(client, row.id).await?);
    incident.postmortem = client
        .query_opt(
            "SELECT body, at, actor FROM sh_incident_postmortems WHERE incident = $1",
            &[&row.id],
        )
        .await?
        .map(|r| Postmortem {
            body: r.get(0),
            at: r.get(1),
            actor: r.get(2),
        });
    Ok(incident)
}

impl PostgresHistory {
    pub(super) async fn set_postmortem_of(
        &self,
        p: &NewPostmortem,
    ) -> Result<Option<Postmortem>, Error> {
        self.call(async move |client| {
            let tx = client.transaction().await?;
            if tx
                .query_opt(
                    "SELECT 1 FROM sh_incidents WHERE id = $1 FOR UPDATE",
                    &[&p.incident],
                )
                .await?
                .is_none()
            {
                return Ok(None);
            }
            let m = &p.postmortem;
            tx.execute(
                "INSERT INTO sh_incident_postmortems (incident, body, at, actor)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (incident) DO UPDATE SET body = $2, at = $3, actor = $4",
                &[&p.incident, &m.body, &m.at, &m.actor],
            )
            .await?;
            tx.commit().await?;
            Ok(Some(m.clone()))
        })
        .await
    }

    pub(super) async fn incidents_of(
        &self,
        since: i64,
        limit: usize,
    ) -> Result<Vec<Incident>, Error> {
        self.call(async move |client| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM sh_incidents WHERE resolved IS NULL OR resolved >= $1
                         ORDER BY started DESC, id DESC LIMIT $2"
                    ),
                    &[&since, &limit],
                )
                .await?;
            let mut out = Vec::with_capacity(rows.len());
            for r in &rows {
                out.push(whole(&*client, &row(r)).await?);
            }
            Ok(out)
        })
        .await
    }

    pub(super) async fn incident_of(&self, id: i64) -> Result<Option<Incident>, Error> {
        self.call(async move |client| {
            let Some(r) = client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM sh_incidents WHERE id = $1"),
                    &[&id],
                )
                .await?
            else {
                return Ok(None);
            };
            Ok(Some(whole(&*client, &row(&r)).await?))
        })
        .await
    }

    pub(super) async fn post_update_of(
        &self,
        u: &NewUpdate,
    ) -> Result<Option<IncidentUpdate>, Error> {
        self.call(async move |client| {
            let tx = client.transaction().await?;
            let Some(found) = tx
                .query_opt(
                    "SELECT resolved FROM sh_incidents WHERE id = $1 FOR UPDATE",
                    &[&u.incident],
                )
                .await?
            else {
                return Ok(None);
            };
            let resolved: Option<i64> = found.get(0);
            let resolves = u.status == UpdateStatus::Resolved && resolved.is_none();
            tx.execute(
                "UPDATE sh_incidents SET updated = $2,
                   resolved = CASE WHEN $3 THEN $2 ELSE resolved END WHERE id = $1",
                &[&u.incident, &u.at, &resolves],
            )
            .await?;
            let id = insert_update(
                &tx,
                u.incident,
                u.at,
                u.status.as_str(),
                &u.message,
                u.actor.as_deref(),
                UpdateKind::Operator,
            )
            .await?;
            tx.commit().await?;
            Ok(Some(IncidentUpdate {
                id,
                at: u.at,
                status: u.status,
                message: u.message.clone(),
                actor: u.actor.clone(),
                kind: UpdateKind::Operator,
            }))
        })
        .await
    }
}
