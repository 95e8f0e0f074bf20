//! The reads of [`PostgresHistory`]: every instance's rows merged.

use std::time::Duration;

use status_core::CheckStatus;
use tokio_postgres::Row;

use super::PostgresHistory;
use crate::model::{
    millis, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Spent, Tier, TransitionRecord,
};
use crate::{Error, Retention};

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

impl PostgresHistory {
    pub(super) async fn buckets_of(
        &self,
        series: &Series,
        tier: Tier,
        from: i64,
        to: i64,
    ) -> Result<Vec<Bucket>, Error> {
        self.call(async move |client| {
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
        })
            .await
    }

    pub(super) async fn days_of_of(
        &self,
        kind: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<(Series, Vec<Bucket>)>, Error> {
        self.call(async move |client| {
            let rows = client
                .query(
                    "SELECT s.name, b.start, sum(b.ok)::BIGINT, sum(b.minor)::BIGINT,
                            sum(b.major)::BIGINT, sum(b.outage)::BIGINT, sum(b.muted)::BIGINT
                     FROM sh_buckets b JOIN sh_series s ON s.id = b.series
                     WHERE s.kind = $1 AND b.tier = 2 AND b.start >= $2 AND b.start < $3
                     GROUP BY s.name, b.start ORDER BY s.name, b.start",
                    &[&kind, &from, &to],
                )
                .await?;
            let mut out: Vec<(Series, Vec<Bucket>)> = Vec::new();
            for r in &rows {
                let name: &str = r.get(0);
                let u = |i: usize| r.get::<_, i64>(i).max(0).cast_unsigned();
                let bucket = Bucket {
                    start: r.get(1),
                    spent: Spent {
                        ok: u(2),
                        minor: u(3),
                        major: u(4),
                        outage: u(5),
                        muted: u(6),
                    },
                    ..Bucket::default()
                };
                match out.last_mut() {
                    Some((series, buckets)) if series.name() == name => buckets.push(bucket),
                    _ => {
                        if let Some(series) = Series::from_parts(kind, name) {
                            out.push((series, vec![bucket]));
                        }
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    pub(super) async fn transitions_of(
        &self,
        series: &Series,
        from: i64,
        to: i64,
        limit: usize,
    ) -> Result<Vec<TransitionRecord>, Error> {
        self.call(async move |client| {
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
        })
        .await
    }

    pub(super) async fn audit_of(
        &self,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<(i64, AuditRecord)>, Error> {
        self.call(async move |client| {
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
                            at: millis(r.get(1)),
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
        })
        .await
    }

    pub(super) async fn mutes_of(&self) -> Result<Vec<MuteRecord>, Error> {
        self.mute_rows(
            "SELECT dependency, reason, actor, set_at, start, until FROM sh_mutes
             WHERE instance = $1 ORDER BY dependency",
        )
        .await
    }

    /// The other instances' mutes, by dependency.
    pub(super) async fn peer_mutes_of(&self) -> Result<Vec<MuteRecord>, Error> {
        self.mute_rows(
            "SELECT dependency, reason, actor, set_at, start, until FROM sh_mutes
             WHERE instance <> $1 ORDER BY dependency, set_at",
        )
        .await
    }

    /// The mutes ended early (those whose window has ended are pruned).
    pub(super) async fn mute_ends_of(&self) -> Result<Vec<MuteRecord>, Error> {
        self.mute_rows(
            "SELECT dependency, reason, actor, set_at, start, until FROM sh_mute_ends
             WHERE $1::TEXT IS NOT NULL ORDER BY dependency, set_at",
        )
        .await
    }

    /// Mutes as `sql` selects them, given this instance's name.
    async fn mute_rows(&self, sql: &str) -> Result<Vec<MuteRecord>, Error> {
        self.call(async |client| {
            let rows = client.query(sql, &[&self.instance]).await?;
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
        })
        .await
    }

    pub(super) async fn overrides_of(&self) -> Result<Vec<OverrideRecord>, Error> {
        self.call(async |client| {
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
        })
        .await
    }

    pub(super) async fn state_of(&self, key: &str) -> Result<Option<String>, Error> {
        self.call(async move |client| {
            let row = client
                .query_opt(
                    "SELECT value FROM sh_state WHERE instance = $1 AND key = $2",
                    &[&self.instance, &key],
                )
                .await?;
            Ok(row.map(|r| r.get(0)))
        })
        .await
    }

    pub(super) async fn series_of(&self, kind: &str) -> Result<Vec<Series>, Error> {
        self.call(async move |client| {
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
        })
        .await
    }

    pub(super) async fn prune_of(&self, now: i64, retention: &Retention) -> Result<u64, Error> {
        self.call(async move |client| {
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
            // Incidents are kept as long as the audit trail that speaks of them.
            for table in ["sh_incident_updates", "sh_incident_postmortems"] {
                deleted += client
                    .execute(
                        &format!(
                            "DELETE FROM {table} WHERE incident IN
                               (SELECT id FROM sh_incidents WHERE resolved < $1)"
                        ),
                        &[&ms(retention.audit)],
                    )
                    .await?;
            }
            deleted += client
                .execute(
                    "DELETE FROM sh_incidents WHERE resolved < $1",
                    &[&ms(retention.audit)],
                )
                .await?;
            deleted += client
                .execute(
                    "DELETE FROM sh_maintenances WHERE until < $1",
                    &[&ms(retention.audit)],
                )
                .await?;
            // What was sent, and addresses never confirmed, are kept two days.
            let stale = ms(crate::model::SUBSCRIPTIONS_PRUNED_AFTER);
            deleted += client
                .execute("DELETE FROM sh_deliveries WHERE at < $1", &[&stale])
                .await?;
            deleted += client
                .execute(
                    "DELETE FROM sh_subscribers WHERE confirmed IS NULL AND created < $1",
                    &[&stale],
                )
                .await?;
            deleted += client
                .execute("DELETE FROM sh_mute_ends WHERE until < $1", &[&now])
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
        })
        .await
    }
}
