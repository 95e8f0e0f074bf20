//! Maintenances announced to the public, in PostgreSQL: one list for the whole fleet.

use super::PostgresHistory;
use crate::model::{millis, Announcement};
use crate::Error;

/// The most announcements one read answers.
const MAX_ANNOUNCEMENTS: i64 = 200;

const COLUMNS: &str = "id, title, body, dependencies, start, until, created, actor, cancelled";

fn row(r: &tokio_postgres::Row) -> Announcement {
    Announcement {
        id: r.get(0),
        title: r.get(1),
        body: r.get(2),
        dependencies: serde_json::from_str(r.get(3)).unwrap_or_default(),
        start: millis(r.get(4)),
        until: millis(r.get(5)),
        created: millis(r.get(6)),
        actor: r.get(7),
        cancelled: r.get::<_, Option<i64>>(8).map(millis),
    }
}

impl PostgresHistory {
    pub(super) async fn announce_of(&self, a: &Announcement) -> Result<Announcement, Error> {
        let dependencies = serde_json::to_string(&a.dependencies).unwrap_or_default();
        self.call(async move |client| {
            let found = client
                .query_one(
                    &format!(
                        "INSERT INTO sh_maintenances
                           (title, body, dependencies, start, until, created, actor)
                         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {COLUMNS}"
                    ),
                    &[
                        &a.title,
                        &a.body,
                        &dependencies,
                        &a.start.timestamp_millis(),
                        &a.until.timestamp_millis(),
                        &a.created.timestamp_millis(),
                        &a.actor,
                    ],
                )
                .await?;
            Ok(row(&found))
        })
        .await
    }

    pub(super) async fn announcements_of(&self, since: i64) -> Result<Vec<Announcement>, Error> {
        self.call(async move |client| {
            Ok(client
                .query(
                    &format!(
                        "SELECT {COLUMNS} FROM sh_maintenances WHERE until >= $1
                         ORDER BY start, id LIMIT $2"
                    ),
                    &[&since, &MAX_ANNOUNCEMENTS],
                )
                .await?
                .iter()
                .map(row)
                .collect())
        })
        .await
    }

    pub(super) async fn cancel_announcement_of(
        &self,
        id: i64,
        at: i64,
    ) -> Result<Option<Announcement>, Error> {
        self.call(async move |client| {
            client
                .execute(
                    "UPDATE sh_maintenances SET cancelled = $2 WHERE id = $1 AND cancelled IS NULL",
                    &[&id, &at],
                )
                .await?;
            Ok(client
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM sh_maintenances WHERE id = $1"),
                    &[&id],
                )
                .await?
                .as_ref()
                .map(row))
        })
        .await
    }
}
