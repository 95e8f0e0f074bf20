//! The writes of [`PostgresHistory`]: one transaction of [`Writes`], this instance's
//! increments added to its minutes, hours and days.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;

use tokio_postgres::Transaction;

use super::PostgresHistory;
use crate::model::{Bucket, Series};
use crate::Writes;

/// Writes everything in `w` in `tx`; answers the series ids it learned.
#[allow(clippy::cast_possible_wrap, clippy::too_many_lines)] // counts and ms far below 2^63
pub(super) async fn write_all(
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
    super::incidents::write_facts(tx, &w.incidents, instance, w.incident_quiet, w.now).await?;
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
    let tiers = w.batch.tiers();
    if !tiers.is_empty() {
        // Each minute's increment, and its sum in the hour and the day that hold it, added
        // to this instance's rows: a run never writes over another's time.
        let col = |f: &dyn Fn(&Bucket) -> u64| -> Vec<i64> {
            tiers.values().map(|b| f(b) as i64).collect()
        };
        let series: Vec<i64> = tiers.keys().map(|(s, _, _)| id(s)).collect();
        let levels: Vec<i16> = tiers
            .keys()
            .map(|(_, t, _)| i16::try_from(t.code()).unwrap_or(0))
            .collect();
        let starts: Vec<i64> = tiers.keys().map(|(_, _, start)| *start).collect();
        tx.execute(
            concat!(
                "INSERT INTO sh_buckets (series, tier, start, instance, datacenter, ok, minor, major,
                                         outage, muted, checks, failures, dmin, dsum, dmax)
                 SELECT t.s, t.ti, t.st, $1, $2, t.ok, t.mi, t.ma, t.ou, t.mu, t.ch, t.fa, t.dn, t.ds, t.dx
                 FROM UNNEST($3::BIGINT[], $4::SMALLINT[], $5::BIGINT[], $6::BIGINT[], $7::BIGINT[],
                             $8::BIGINT[], $9::BIGINT[], $10::BIGINT[], $11::BIGINT[], $12::BIGINT[],
                             $13::BIGINT[], $14::BIGINT[], $15::BIGINT[])
                   AS t(s, ti, st, ok, mi, ma, ou, mu, ch, fa, dn, ds, dx)
                 ON CONFLICT (series, tier, start, instance) DO UPDATE SET ",
                add_totals!("sh_buckets", "LEAST", "GREATEST")
            ),
            &[
                instance,
                dc,
                &series,
                &levels,
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
            &[instance, dc, &a.at.timestamp_millis(), &a.actor, &a.action, &a.target, &a.reason, &a.address, &a.outcome],
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
    for m in &w.mute_ends {
        tx.execute(
            "INSERT INTO sh_mute_ends (dependency, set_at, reason, actor, start, until, ended_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            &[
                &m.dependency,
                &m.set_at.timestamp_millis(),
                &m.reason,
                &m.actor,
                &m.start.timestamp_millis(),
                &m.until.timestamp_millis(),
                instance,
            ],
        )
        .await?;
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
