//! Exclusions, in PostgreSQL: one list for the whole fleet.

use super::PostgresHistory;
use crate::exclusion::Exclusion;
use crate::model::{millis, Series};
use crate::Error;

/// The most exclusions one read answers.
const MAX_EXCLUSIONS: i64 = 1_000;

const COLUMNS: &str = "id, kind, name, start, until, reason, actor, created, amounts";

fn row(r: &tokio_postgres::Row) -> Option<Exclusion> {
    Some(Exclusion {
        id: r.get(0),
        series: Series::from_parts(r.get(1), r.get(2))?,
        from: millis(r.get(3)),
        to: millis(r.get(4)),
        reason: r.get(5),
        actor: r.get(6),
        created: millis(r.get(7)),
        amounts: Exclusion::amounts_from_json(r.get(8)),
    })
}

impl PostgresHistory {
    pub(super) async fn exclude_of(&self, e: &Exclusion) -> Result<Exclusion, Error> {
        let amounts = e.amounts_json();
        self.call(async move |client| {
            let id: i64 = client
                .query_one(
                    "INSERT INTO sh_exclusions
                       (kind, name, start, until, reason, actor, created, amounts)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
                    &[
                        &e.series.kind(),
                        &e.series.name(),
                        &e.from.timestamp_millis(),
                        &e.to.timestamp_millis(),
                        &e.reason,
                        &e.actor,
                        &e.created.timestamp_millis(),
                        &amounts,
                    ],
                )
                .await?
                .get(0);
            Ok(Exclusion { id, ..e.clone() })
        })
        .await
    }

    pub(super) async fn exclusions_of(&self) -> Result<Vec<Exclusion>, Error> {
        self.call(async move |client| {
            Ok(client
                .query(
                    &format!("SELECT {COLUMNS} FROM sh_exclusions ORDER BY start, id LIMIT $1"),
                    &[&MAX_EXCLUSIONS],
                )
                .await?
                .iter()
                .filter_map(row)
                .collect())
        })
        .await
    }

    pub(super) async fn remove_exclusion_of(&self, id: i64) -> Result<Option<Exclusion>, Error> {
        self.call(async move |client| {
            Ok(client
                .query_opt(
                    &format!("DELETE FROM sh_exclusions WHERE id = $1 RETURNING {COLUMNS}"),
                    &[&id],
                )
                .await?
                .as_ref()
                .and_then(row))
        })
        .await
    }
}
