//! [`PostgresHistory`]: history in PostgreSQL, one database for a fleet. Every row is tagged
//! with the instance and data center that wrote it; reads merge every instance (a
//! dependency's time in each level is the fleet's), mutes, overrides and state are each
//! instance's own.

mod schema;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::PoisonError;
use std::time::Duration;

use status_core::CheckStatus;
use tokio_postgres::{Client, NoTls, Row, Transaction};

use self::schema::{MIGRATIONS, MIGRATION_LOCK};
use crate::model::{
    millis, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Spent, Tier, TransitionRecord,
};
use crate::store::{HistoryStore, StoreFuture};
use crate::{Retention, StoreError, Writes};

/// The PostgreSQL schema's migrations, in order: for tests that build a database at an
/// earlier version (record it in `sh_schema`).
#[doc(hidden)]
#[must_use]
pub fn postgres_migrations() -> &'static [&'static str] {
    MIGRATIONS
}

/// How long any one call may take before the connection is dropped and the call fails.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// History in a PostgreSQL database that a fleet shares.
///
/// Give each instance an id of its own that survives its restarts (a StatefulSet's pod
/// name, a host name): its mutes, overrides and notifier state are restored by it.
pub struct PostgresHistory {
    config: tokio_postgres::Config,
    instance: String,
    datacenter: String,
    client: tokio::sync::Mutex<Option<Client>>,
    open: AtomicBool,
    run: AtomicI64,
    series: std::sync::Mutex<HashMap<Series, i64>>,
}

impl std::fmt::Debug for PostgresHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresHistory")
            .field("instance", &self.instance)
            .field("datacenter", &self.datacenter)
            .field("open", &self.open.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl PostgresHistory {
    /// A store in the database at `url` (`postgres://…` or `host=… user=…`), written as
    /// `instance` of `datacenter`; connected by the driver.
    ///
    /// # Errors
    ///
    /// When `url` does not parse.
    pub fn new(
        url: &str,
        instance: impl Into<String>,
        datacenter: impl Into<String>,
    ) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::new(format!("not a PostgreSQL URL: {e}")))?;
        config.connect_timeout(Duration::from_secs(5));
        config.application_name("status-history");
        Ok(Self {
            config,
            instance: instance.into(),
            datacenter: datacenter.into(),
            client: tokio::sync::Mutex::new(None),
            open: AtomicBool::new(false),
            run: AtomicI64::new(0),
            series: std::sync::Mutex::default(),
        })
    }

    /// The connection, for what the typed reads do not cover (tests, tools): runs `f` on
    /// it.
    ///
    /// # Errors
    ///
    /// When the store is not open.
    pub async fn with_client<T>(&self, f: impl AsyncFnOnce(&Client) -> T) -> Result<T, StoreError> {
        let guard = self.client.lock().await;
        let client = guard.as_ref().ok_or_else(not_open)?;
        Ok(f(client).await)
    }

    /// Runs `call` on the connection, bounded in time; a connection that closed or did not
    /// answer is dropped (the driver connects again).
    async fn call<T>(
        &self,
        call: impl AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, StoreError> {
        let mut guard = self.client.lock().await;
        let client = guard.as_mut().ok_or_else(not_open)?;
        let answer = tokio::time::timeout(CALL_TIMEOUT, call(client)).await;
        match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                if guard.as_ref().is_none_or(Client::is_closed) {
                    *guard = None;
                    self.open.store(false, Ordering::Release);
                }
                Err(pg(&e))
            }
            Err(_) => {
                *guard = None;
                self.open.store(false, Ordering::Release);
                Err(StoreError::new(format!(
                    "PostgreSQL did not answer within {} s",
                    CALL_TIMEOUT.as_secs()
                )))
            }
        }
    }
}

fn not_open() -> StoreError {
    StoreError::new("not connected")
}

fn pg(e: &tokio_postgres::Error) -> StoreError {
    StoreError::new(match e.as_db_error() {
        Some(db) => format!("PostgreSQL: {}", db.message()),
        None => format!("PostgreSQL: {e}"),
    })
}

/// Applies what is missing of the schema, under the fleet-wide advisory lock.
async fn migrate(client: &mut Client) -> Result<(), StoreError> {
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
        return Err(StoreError::new(format!(
            "the history database is at schema version {version}, written by a newer \
             status-history (this one knows up to {latest}); it is left as it is"
        )));
    }
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .skip(usize::try_from(version).unwrap_or(0))
    {
        tx.batch_execute(sql)
            .await
            .map_err(|e| StoreError::new(format!("migration to version {}: {}", i + 1, pg(&e))))?;
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

/// The columns of a merged bucket: start, then what `bucket` reads.
const MERGED: &str = "sum(b.ok)::BIGINT, sum(b.minor)::BIGINT, sum(b.major)::BIGINT,
    sum(b.outage)::BIGINT, sum(b.muted)::BIGINT, sum(b.checks)::BIGINT,
    sum(b.failures)::BIGINT, coalesce(min(CASE WHEN b.checks > 0 THEN b.dmin END), 0)::BIGINT,
    sum(b.dsum)::BIGINT, coalesce(max(b.dmax), 0)::BIGINT";

fn bucket(r: &Row, first: usize) -> Bucket {
    let u = |i: usize| r.get::<_, i64>(first + i).max(0).cast_unsigned();
    Bucket {
        start: r.get(first),
        spent: Spent {
            ok: u(1),
            minor: u(2),
            major: u(3),
            outage: u(4),
            muted: u(5),
        },
        checks: u(6),
        failures: u(7),
        duration_min_us: u(8),
        duration_sum_us: u(9),
        duration_max_us: u(10),
    }
}

fn level(v: Option<i16>) -> Option<CheckStatus> {
    v.and_then(|v| u8::try_from(v).ok())
        .and_then(CheckStatus::from_severity)
}

impl HistoryStore for PostgresHistory {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn open(&self, now: i64) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let mut guard = self.client.lock().await;
            if guard.as_ref().is_some_and(|c| !c.is_closed()) {
                return Ok(());
            }
            let (mut client, connection) =
                tokio::time::timeout(CALL_TIMEOUT, self.config.connect(NoTls))
                    .await
                    .map_err(|_| StoreError::new("PostgreSQL did not answer the connection"))?
                    .map_err(|e| pg(&e))?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!("the history's PostgreSQL connection ended: {e}");
                }
            });
            client
                .batch_execute("SET statement_timeout = '10s'")
                .await
                .map_err(|e| pg(&e))?;
            tokio::time::timeout(CALL_TIMEOUT, migrate(&mut client))
                .await
                .map_err(|_| StoreError::new("PostgreSQL did not answer the migration"))??;
            // One run a process: a connection lost and made again continues it.
            if self.run.load(Ordering::Acquire) == 0 {
                let row = client
                    .query_one(
                        "INSERT INTO sh_runs (instance, datacenter, started, covered_until)
                         VALUES ($1, $2, $3, $3) RETURNING id",
                        &[&self.instance, &self.datacenter, &now],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                self.run.store(row.get(0), Ordering::Release);
            }
            *guard = Some(client);
            self.open.store(true, Ordering::Release);
            Ok(())
        })
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    fn write<'a>(&'a self, writes: &'a Writes) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let known = self
                .series
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let learned = self
                .call(async |client| {
                    let tx = client.transaction().await?;
                    let learned = write_all(&tx, known, self, writes).await?;
                    tx.commit().await?;
                    Ok(learned)
                })
                .await?;
            self.series
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(learned);
            Ok(())
        })
    }

    fn buckets<'a>(
        &'a self,
        series: &'a Series,
        tier: Tier,
        from: i64,
        to: i64,
    ) -> StoreFuture<'a, Vec<Bucket>> {
        Box::pin(self.call(async move |client| {
            let sql = format!(
                "SELECT b.start, {MERGED} FROM sh_buckets b JOIN sh_series s ON s.id = b.series
                 WHERE s.kind = $1 AND s.name = $2 AND b.tier = $3 AND b.start >= $4 AND b.start < $5
                 GROUP BY b.start ORDER BY b.start"
            );
            let tier = i16::try_from(tier.code()).unwrap_or(0);
            let rows = client
                .query(&sql, &[&series.kind(), &series.name(), &tier, &from, &to])
                .await?;
            Ok(rows.iter().map(|r| bucket(r, 0)).collect())
        }))
    }

    fn days_of<'a>(
        &'a self,
        kind: &'a str,
        from: i64,
        to: i64,
    ) -> StoreFuture<'a, Vec<(Series, Bucket)>> {
        Box::pin(self.call(async move |client| {
            let sql = format!(
                "SELECT s.name, b.start, {MERGED} FROM sh_buckets b JOIN sh_series s ON s.id = b.series
                 WHERE s.kind = $1 AND b.tier = 2 AND b.start >= $2 AND b.start < $3
                 GROUP BY s.name, b.start ORDER BY s.name, b.start"
            );
            let rows = client.query(&sql, &[&kind, &from, &to]).await?;
            Ok(rows
                .iter()
                .filter_map(|r| {
                    let name: String = r.get(0);
                    Series::from_parts(kind, &name).map(|s| (s, bucket(r, 1)))
                })
                .collect())
        }))
    }

    fn transitions<'a>(
        &'a self,
        series: &'a Series,
        from: i64,
        to: i64,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TransitionRecord>> {
        Box::pin(self.call(async move |client| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    "SELECT t.at, t.from_level, t.to_level, t.message, t.blocked_by
                     FROM sh_transitions t JOIN sh_series s ON s.id = t.series
                     WHERE s.kind = $1 AND s.name = $2 AND t.at >= $3 AND t.at < $4
                     ORDER BY t.at DESC, t.id DESC LIMIT $5",
                    &[&series.kind(), &series.name(), &from, &to, &limit],
                )
                .await?;
            let mut out: Vec<TransitionRecord> = rows
                .iter()
                .map(|r| {
                    let blocked: String = r.get(4);
                    TransitionRecord {
                        series: series.clone(),
                        at: r.get(0),
                        from: level(r.get(1)),
                        to: level(r.get(2)).unwrap_or(CheckStatus::Outage),
                        message: r.get(3),
                        blocked_by: serde_json::from_str(&blocked).unwrap_or_default(),
                    }
                })
                .collect();
            out.reverse();
            Ok(out)
        }))
    }

    fn audit(&self, before: Option<i64>, limit: usize) -> StoreFuture<'_, Vec<(i64, AuditRecord)>> {
        Box::pin(self.call(async move |client| {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    "SELECT id, at, actor, action, target, reason, address, outcome FROM sh_audit
                     WHERE id < $1 ORDER BY id DESC LIMIT $2",
                    &[&before.unwrap_or(i64::MAX), &limit],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| {
                    (
                        r.get(0),
                        AuditRecord {
                            at: r.get(1),
                            actor: r.get(2),
                            action: r.get(3),
                            target: r.get(4),
                            reason: r.get(5),
                            address: r.get(6),
                            outcome: r.get(7),
                        },
                    )
                })
                .collect())
        }))
    }

    fn mutes(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        Box::pin(self.call(async |client| {
            let rows = client
                .query(
                    "SELECT dependency, reason, actor, set_at, start, until FROM sh_mutes
                     WHERE instance = $1 ORDER BY dependency",
                    &[&self.instance],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| MuteRecord {
                    dependency: r.get(0),
                    reason: r.get(1),
                    actor: r.get(2),
                    set_at: millis(r.get(3)),
                    start: millis(r.get(4)),
                    until: millis(r.get(5)),
                })
                .collect())
        }))
    }

    fn overrides(&self) -> StoreFuture<'_, Vec<OverrideRecord>> {
        Box::pin(self.call(async |client| {
            let rows = client
                .query(
                    "SELECT feature, enabled, reason, actor, set_at, expires_at FROM sh_overrides
                     WHERE instance = $1 ORDER BY feature",
                    &[&self.instance],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| OverrideRecord {
                    feature: r.get(0),
                    enabled: r.get(1),
                    reason: r.get(2),
                    actor: r.get(3),
                    set_at: millis(r.get(4)),
                    expires_at: millis(r.get(5)),
                })
                .collect())
        }))
    }

    fn state<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(self.call(async move |client| {
            let row = client
                .query_opt(
                    "SELECT value FROM sh_state WHERE instance = $1 AND key = $2",
                    &[&self.instance, &key],
                )
                .await?;
            Ok(row.map(|r| r.get(0)))
        }))
    }

    fn series<'a>(&'a self, kind: &'a str) -> StoreFuture<'a, Vec<Series>> {
        Box::pin(self.call(async move |client| {
            let rows = client
                .query(
                    "SELECT name FROM sh_series WHERE kind = $1 ORDER BY name",
                    &[&kind],
                )
                .await?;
            Ok(rows
                .iter()
                .filter_map(|r| Series::from_parts(kind, r.get(0)))
                .collect())
        }))
    }

    fn prune<'a>(&'a self, now: i64, retention: &'a Retention) -> StoreFuture<'a, u64> {
        Box::pin(self.call(async move |client| {
            let ms = |d: Duration| now - i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2);
            let mut deleted = 0;
            for (tier, kept) in [
                (0i16, retention.minutes),
                (1, retention.hours),
                (2, retention.days),
            ] {
                deleted += client
                    .execute(
                        "DELETE FROM sh_buckets WHERE tier = $1 AND start < $2",
                        &[&tier, &(ms(kept) / 1000)],
                    )
                    .await?;
            }
            deleted += client
                .execute(
                    "DELETE FROM sh_transitions WHERE at < $1",
                    &[&ms(retention.transitions)],
                )
                .await?;
            deleted += client
                .execute(
                    "DELETE FROM sh_audit WHERE at < $1",
                    &[&ms(retention.audit)],
                )
                .await?;
            deleted += client
                .execute(
                    "DELETE FROM sh_mutes WHERE instance = $1 AND until < $2",
                    &[&self.instance, &now],
                )
                .await?;
            deleted += client
                .execute(
                    "DELETE FROM sh_overrides WHERE instance = $1 AND expires_at < $2",
                    &[&self.instance, &now],
                )
                .await?;
            Ok(deleted)
        }))
    }
}

/// Writes everything in `w` in `tx`; answers the series ids it learned.
#[allow(clippy::cast_possible_wrap, clippy::too_many_lines)] // counts and ms far below 2^63
async fn write_all(
    tx: &Transaction<'_>,
    mut known: HashMap<Series, i64>,
    store: &PostgresHistory,
    w: &Writes,
) -> Result<HashMap<Series, i64>, tokio_postgres::Error> {
    let (instance, dc) = (&store.instance, &store.datacenter);
    let run = store.run.load(Ordering::Acquire);
    let mut learned = HashMap::new();
    let wanted: BTreeSet<&Series> = w
        .batch
        .transitions
        .iter()
        .map(|t| &t.series)
        .chain(w.batch.minutes.iter().map(|(s, _)| s))
        .collect();
    for series in wanted {
        if known.contains_key(series) {
            continue;
        }
        tx.execute(
            "INSERT INTO sh_series (kind, name) VALUES ($1, $2) ON CONFLICT (kind, name) DO NOTHING",
            &[&series.kind(), &series.name()],
        )
        .await?;
        let id: i64 = tx
            .query_one(
                "SELECT id FROM sh_series WHERE kind = $1 AND name = $2",
                &[&series.kind(), &series.name()],
            )
            .await?
            .get(0);
        known.insert(series.clone(), id);
        learned.insert(series.clone(), id);
    }
    let id = |s: &Series| known.get(s).copied().unwrap_or_default();
    if !w.batch.transitions.is_empty() {
        let insert = tx
            .prepare(
                "INSERT INTO sh_transitions
                   (series, run, instance, datacenter, at, from_level, to_level, message, blocked_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .await?;
        for t in &w.batch.transitions {
            let blocked = serde_json::to_string(&t.blocked_by).unwrap_or_else(|_| "[]".into());
            tx.execute(
                &insert,
                &[
                    &id(&t.series),
                    &run,
                    instance,
                    dc,
                    &t.at,
                    &t.from.map(|l| i16::from(l.severity())),
                    &i16::from(t.to.severity()),
                    &t.message,
                    &blocked,
                ],
            )
            .await?;
        }
    }
    if !w.batch.minutes.is_empty() {
        let col = |f: &dyn Fn(&Bucket) -> u64| -> Vec<i64> {
            w.batch.minutes.iter().map(|(_, b)| f(b) as i64).collect()
        };
        let series: Vec<i64> = w.batch.minutes.iter().map(|(s, _)| id(s)).collect();
        let starts: Vec<i64> = w.batch.minutes.iter().map(|(_, b)| b.start).collect();
        tx.execute(
            "INSERT INTO sh_buckets (series, tier, start, instance, datacenter, ok, minor, major,
                                     outage, muted, checks, failures, dmin, dsum, dmax)
             SELECT t.s, 0, t.st, $1, $2, t.ok, t.mi, t.ma, t.ou, t.mu, t.ch, t.fa, t.dn, t.ds, t.dx
             FROM UNNEST($3::BIGINT[], $4::BIGINT[], $5::BIGINT[], $6::BIGINT[], $7::BIGINT[],
                         $8::BIGINT[], $9::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::BIGINT[],
                         $13::BIGINT[], $14::BIGINT[])
               AS t(s, st, ok, mi, ma, ou, mu, ch, fa, dn, ds, dx)
             ON CONFLICT (series, tier, start, instance) DO UPDATE SET
               ok = EXCLUDED.ok, minor = EXCLUDED.minor, major = EXCLUDED.major,
               outage = EXCLUDED.outage, muted = EXCLUDED.muted, checks = EXCLUDED.checks,
               failures = EXCLUDED.failures, dmin = EXCLUDED.dmin, dsum = EXCLUDED.dsum,
               dmax = EXCLUDED.dmax",
            &[
                instance,
                dc,
                &series,
                &starts,
                &col(&|b| b.spent.ok),
                &col(&|b| b.spent.minor),
                &col(&|b| b.spent.major),
                &col(&|b| b.spent.outage),
                &col(&|b| b.spent.muted),
                &col(&|b| b.checks),
                &col(&|b| b.failures),
                &col(&|b| b.duration_min_us),
                &col(&|b| b.duration_sum_us),
                &col(&|b| b.duration_max_us),
            ],
        )
        .await?;
        // Hours from minutes, then days from hours: this instance's, for the buckets touched.
        for (tier, finer, length) in [(1i16, 0i16, 3_600i64), (2, 1, 86_400)] {
            let keys: BTreeSet<(i64, i64)> = series
                .iter()
                .zip(&starts)
                .map(|(s, start)| (*s, start.div_euclid(length) * length))
                .collect();
            let (ks, kt): (Vec<i64>, Vec<i64>) = keys.into_iter().unzip();
            tx.execute(
                &format!(
                    "INSERT INTO sh_buckets (series, tier, start, instance, datacenter, ok, minor,
                                             major, outage, muted, checks, failures, dmin, dsum, dmax)
                     SELECT k.series, $1, k.start, $2, $3, {MERGED}
                     FROM UNNEST($4::BIGINT[], $5::BIGINT[]) AS k(series, start)
                     JOIN sh_buckets b ON b.series = k.series AND b.tier = $6 AND b.instance = $2
                       AND b.start >= k.start AND b.start < k.start + $7
                     GROUP BY k.series, k.start
                     ON CONFLICT (series, tier, start, instance) DO UPDATE SET
                       ok = EXCLUDED.ok, minor = EXCLUDED.minor, major = EXCLUDED.major,
                       outage = EXCLUDED.outage, muted = EXCLUDED.muted, checks = EXCLUDED.checks,
                       failures = EXCLUDED.failures, dmin = EXCLUDED.dmin, dsum = EXCLUDED.dsum,
                       dmax = EXCLUDED.dmax"
                ),
                &[&tier, instance, dc, &ks, &kt, &finer, &length],
            )
            .await?;
        }
    }
    if let Some(until) = w.batch.covered_until {
        tx.execute(
            "UPDATE sh_runs SET covered_until = $1 WHERE id = $2",
            &[&until, &run],
        )
        .await?;
    }
    for a in &w.audit {
        tx.execute(
            "INSERT INTO sh_audit (instance, datacenter, at, actor, action, target, reason, address, outcome)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            &[instance, dc, &a.at, &a.actor, &a.action, &a.target, &a.reason, &a.address, &a.outcome],
        )
        .await?;
    }
    if let Some(mutes) = &w.mutes {
        tx.execute("DELETE FROM sh_mutes WHERE instance = $1", &[instance])
            .await?;
        for m in mutes {
            tx.execute(
                "INSERT INTO sh_mutes (instance, dependency, reason, actor, set_at, start, until)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    instance,
                    &m.dependency,
                    &m.reason,
                    &m.actor,
                    &m.set_at.timestamp_millis(),
                    &m.start.timestamp_millis(),
                    &m.until.timestamp_millis(),
                ],
            )
            .await?;
        }
    }
    if let Some(overrides) = &w.overrides {
        tx.execute("DELETE FROM sh_overrides WHERE instance = $1", &[instance])
            .await?;
        for o in overrides {
            tx.execute(
                "INSERT INTO sh_overrides (instance, feature, enabled, reason, actor, set_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    instance,
                    &o.feature,
                    &o.enabled,
                    &o.reason,
                    &o.actor,
                    &o.set_at.timestamp_millis(),
                    &o.expires_at.timestamp_millis(),
                ],
            )
            .await?;
        }
    }
    let now = w.batch.covered_until.unwrap_or_default();
    for (key, value) in &w.state {
        tx.execute(
            "INSERT INTO sh_state (instance, key, value, updated) VALUES ($1, $2, $3, $4)
             ON CONFLICT (instance, key) DO UPDATE SET value = EXCLUDED.value, updated = EXCLUDED.updated",
            &[instance, key, value, &now],
        )
        .await?;
    }
    Ok(learned)
}
