//! The PostgreSQL schema, as numbered migrations recorded in `sh_schema`; each applied in
//! one transaction under an advisory lock, so that a fleet starting at once migrates once.

/// Each migration, in order: version `i + 1` is `MIGRATIONS[i]` applied.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: timelines, every row tagged with the instance and data center that wrote it.
    "CREATE TABLE sh_series (
        id BIGSERIAL PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        UNIQUE (kind, name)
    );
    CREATE TABLE sh_buckets (
        series BIGINT NOT NULL REFERENCES sh_series(id),
        tier SMALLINT NOT NULL,
        start BIGINT NOT NULL,
        instance TEXT NOT NULL,
        datacenter TEXT NOT NULL,
        ok BIGINT NOT NULL, minor BIGINT NOT NULL, major BIGINT NOT NULL,
        outage BIGINT NOT NULL, muted BIGINT NOT NULL,
        checks BIGINT NOT NULL, failures BIGINT NOT NULL,
        dmin BIGINT NOT NULL, dsum BIGINT NOT NULL, dmax BIGINT NOT NULL,
        PRIMARY KEY (series, tier, start, instance)
    );
    CREATE TABLE sh_runs (
        id BIGSERIAL PRIMARY KEY,
        instance TEXT NOT NULL,
        datacenter TEXT NOT NULL,
        started BIGINT NOT NULL,
        covered_until BIGINT NOT NULL
    );
    CREATE TABLE sh_transitions (
        id BIGSERIAL PRIMARY KEY,
        series BIGINT NOT NULL REFERENCES sh_series(id),
        run BIGINT NOT NULL,
        instance TEXT NOT NULL,
        datacenter TEXT NOT NULL,
        at BIGINT NOT NULL,
        from_level SMALLINT,
        to_level SMALLINT NOT NULL,
        message TEXT NOT NULL,
        blocked_by TEXT NOT NULL
    );
    CREATE INDEX sh_transitions_by_series ON sh_transitions (series, at);",
    // 2: what operators said. Mutes, overrides are each instance's own.
    "CREATE TABLE sh_audit (
        id BIGSERIAL PRIMARY KEY,
        instance TEXT NOT NULL,
        datacenter TEXT NOT NULL,
        at BIGINT NOT NULL,
        actor TEXT,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        reason TEXT,
        address TEXT,
        outcome TEXT NOT NULL
    );
    CREATE INDEX sh_audit_by_time ON sh_audit (at);
    CREATE TABLE sh_mutes (
        instance TEXT NOT NULL,
        dependency TEXT NOT NULL,
        reason TEXT NOT NULL,
        actor TEXT,
        set_at BIGINT NOT NULL,
        start BIGINT NOT NULL,
        until BIGINT NOT NULL,
        PRIMARY KEY (instance, dependency)
    );
    CREATE TABLE sh_overrides (
        instance TEXT NOT NULL,
        feature TEXT NOT NULL,
        enabled BOOLEAN NOT NULL,
        reason TEXT NOT NULL,
        actor TEXT,
        set_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        PRIMARY KEY (instance, feature)
    );",
    // 3: state kept for others, by instance and key.
    "CREATE TABLE sh_state (
        instance TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated BIGINT NOT NULL,
        PRIMARY KEY (instance, key)
    );",
    // 4: incidents, shared by the fleet: keyed by root causes (JSON lists), with the
    // instances that joined each (JSON: instance to when it saw it resolve), and updates.
    "CREATE TABLE sh_incidents (
        id BIGSERIAL PRIMARY KEY,
        title TEXT NOT NULL,
        roots TEXT NOT NULL,
        affected TEXT NOT NULL,
        impact TEXT NOT NULL,
        started BIGINT NOT NULL,
        resolved BIGINT,
        updated BIGINT NOT NULL,
        members TEXT NOT NULL
    );
    CREATE INDEX sh_incidents_by_resolution ON sh_incidents (resolved);
    CREATE TABLE sh_incident_updates (
        id BIGSERIAL PRIMARY KEY,
        incident BIGINT NOT NULL REFERENCES sh_incidents(id),
        at BIGINT NOT NULL,
        status TEXT NOT NULL,
        message TEXT NOT NULL,
        actor TEXT
    );
    CREATE INDEX sh_incident_updates_by_incident ON sh_incident_updates (incident, at);",
    // 5: what each incident update is, a field; older ones told apart once, here.
    "ALTER TABLE sh_incident_updates ADD COLUMN kind TEXT NOT NULL DEFAULT 'opened';
    UPDATE sh_incident_updates SET kind = CASE
        WHEN actor IS NOT NULL THEN 'operator'
        WHEN message LIKE '%reopened%' THEN 'reopened'
        WHEN status = 'resolved' THEN 'resolved'
        ELSE 'opened' END;",
    // 6: an incident's postmortem, once resolved: one an incident, replaced when rewritten;
    // maintenances announced to the public, with the dependencies they cover (a JSON list);
    // the page's subscribers (their secret token kept hashed) and what each was sent, so
    // that a fleet sends each message once.
    "CREATE TABLE sh_incident_postmortems (
        incident BIGINT PRIMARY KEY REFERENCES sh_incidents(id),
        body TEXT NOT NULL,
        at BIGINT NOT NULL,
        actor TEXT
    );
    CREATE TABLE sh_maintenances (
        id BIGSERIAL PRIMARY KEY,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        dependencies TEXT NOT NULL,
        start BIGINT NOT NULL,
        until BIGINT NOT NULL,
        created BIGINT NOT NULL,
        actor TEXT,
        cancelled BIGINT
    );
    CREATE INDEX sh_maintenances_by_end ON sh_maintenances (until);
    CREATE TABLE sh_subscribers (
        id BIGSERIAL PRIMARY KEY,
        kind TEXT NOT NULL,
        address TEXT NOT NULL,
        components TEXT NOT NULL,
        lang TEXT NOT NULL,
        token TEXT NOT NULL UNIQUE,
        created BIGINT NOT NULL,
        confirmed BIGINT,
        confirm_sent BIGINT,
        UNIQUE (kind, address)
    );
    CREATE TABLE sh_deliveries (
        event TEXT NOT NULL,
        subscriber BIGINT NOT NULL,
        at BIGINT NOT NULL,
        PRIMARY KEY (event, subscriber)
    );",
    // 7: past windows excluded from uptime and objectives (planned maintenance said after
    // the fact), with what each bucket had in them when they were made (a JSON list).
    "CREATE TABLE sh_exclusions (
        id BIGSERIAL PRIMARY KEY,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        start BIGINT NOT NULL,
        until BIGINT NOT NULL,
        reason TEXT NOT NULL,
        actor TEXT,
        created BIGINT NOT NULL,
        amounts TEXT NOT NULL
    );",
    // 8: mutes ended before their window's end, for every instance of the fleet to end
    // its copy; kept until the window would have ended.
    "CREATE TABLE sh_mute_ends (
        dependency TEXT NOT NULL,
        set_at BIGINT NOT NULL,
        reason TEXT NOT NULL,
        actor TEXT,
        start BIGINT NOT NULL,
        until BIGINT NOT NULL,
        ended_by TEXT NOT NULL,
        PRIMARY KEY (dependency, set_at)
    );",
];

use tokio_postgres::Client;

use super::pg;
use crate::Error;

/// Migrations are serialized across the fleet by this advisory lock.
pub(crate) const MIGRATION_LOCK: i64 = 0x5354_4154_5553_4853; // "STATUSHS"
/// The advisory lock incidents are merged under: one instance at a time, so that two that
/// see one root fail together open one incident.
pub(crate) const INCIDENT_LOCK: i64 = 0x5354_4154_5553_4943; // "STATUSIC"

/// Applies what is missing of the schema, under the fleet-wide advisory lock.
pub(super) async fn migrate(client: &mut Client) -> Result<(), Error> {
    let tx = client.transaction().await.map_err(|e| pg(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| pg(&e))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS sh_schema (version INTEGER NOT NULL)")
        .await
        .map_err(|e| pg(&e))?;
    let version: i32 = tx
        .query_opt("SELECT version FROM sh_schema", &[])
        .await
        .map_err(|e| pg(&e))?
        .map_or(0, |r| r.get(0));
    let latest = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    if version > latest {
        return Err(Error::of(
            crate::error::Kind::Foreign,
            format!(
                "the history database is at schema version {version}, written by a newer \
             status-history (this one knows up to {latest}); it is left as it is"
            ),
        ));
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(version).unwrap_or(0))
    {
        tx.batch_execute(sql)
            .await
            .map_err(|e| Error::new(format!("migration to version {}: {}", i + 1, pg(&e))))?;
    }
    if version == 0 {
        tx.execute("INSERT INTO sh_schema (version) VALUES ($1)", &[&latest])
            .await
            .map_err(|e| pg(&e))?;
    } else if version < latest {
        tx.execute("UPDATE sh_schema SET version = $1", &[&latest])
            .await
            .map_err(|e| pg(&e))?;
    }
    tx.commit().await.map_err(|e| pg(&e))
}
