//! The status page's subscribers and what each was sent, in PostgreSQL: one list and one
//! record of deliveries for the whole fleet, so that each message is sent once.

use super::PostgresHistory;
use crate::model::{millis, Subscriber, SubscriberKind};
use crate::Error;

/// The most subscribers one read answers.
const MAX_READ: i64 = 100_000;

const COLUMNS: &str =
    "id, kind, address, components, lang, token, created, confirmed, confirm_sent";

fn row(r: &tokio_postgres::Row) -> Subscriber {
    Subscriber {
        id: r.get(0),
        kind: SubscriberKind::parse(r.get(1)).unwrap_or(SubscriberKind::Email),
        address: r.get(2),
        components: serde_json::from_str(r.get(3)).unwrap_or_default(),
        lang: r.get(4),
        token: r.get(5),
        created: millis(r.get(6)),
        confirmed: r.get::<_, Option<i64>>(7).map(millis),
        confirm_sent: r.get::<_, Option<i64>>(8).map(millis),
    }
}

impl PostgresHistory {
    pub(super) async fn subscriber_of(
        &self,
        kind: SubscriberKind,
        address: &str,
    ) -> Result<Option<Subscriber>, Error> {
        self.call(async move |client| {
            Ok(client
                .query_opt(
                    &format!(
                        "SELECT {COLUMNS} FROM sh_subscribers WHERE kind = $1 AND address = $2"
                    ),
                    &[&kind.as_str(), &address],
                )
                .await?
                .as_ref()
                .map(row))
        })
        .await
    }

    pub(super) async fn subscribe_of(&self, s: &Subscriber) -> Result<Subscriber, Error> {
        let components = serde_json::to_string(&s.components).unwrap_or_default();
        self.call(async move |client| {
            let kept = client
                .query_one(
                    &format!(
                        "INSERT INTO sh_subscribers
                           (kind, address, components, lang, token, created, confirmed, confirm_sent)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT (kind, address) DO UPDATE SET
                           components = $3, lang = $4, token = $5, confirm_sent = $8,
                           confirmed = coalesce(sh_subscribers.confirmed, $7)
                         RETURNING {COLUMNS}"
                    ),
                    &[
                        &s.kind.as_str(),
                        &s.address,
                        &components,
                        &s.lang,
                        &s.token,
                        &s.created.timestamp_millis(),
                        &s.confirmed.map(|t| t.timestamp_millis()),
                        &s.confirm_sent.map(|t| t.timestamp_millis()),
                    ],
                )
                .await?;
            Ok(row(&kept))
        })
        .await
    }

    pub(super) async fn confirm_subscriber_of(
        &self,
        token: &str,
        at: i64,
    ) -> Result<Option<Subscriber>, Error> {
        self.call(async move |client| {
            Ok(client
                .query_opt(
                    &format!(
                        "UPDATE sh_subscribers SET confirmed = coalesce(confirmed, $2)
                         WHERE token = $1 RETURNING {COLUMNS}"
                    ),
                    &[&token, &at],
                )
                .await?
                .as_ref()
                .map(row))
        })
        .await
    }

    pub(super) async fn unsubscribe_of(&self, token: &str) -> Result<Option<Subscriber>, Error> {
        self.call(async move |client| {
            let tx = client.transaction().await?;
            let found = tx
                .query_opt(
                    &format!("DELETE FROM sh_subscribers WHERE token = $1 RETURNING {COLUMNS}"),
                    &[&token],
                )
                .await?
                .as_ref()
                .map(row);
            if let Some(s) = &found {
                tx.execute("DELETE FROM sh_deliveries WHERE subscriber = $1", &[&s.id])
                    .await?;
            }
            tx.commit().await?;
            Ok(found)
        })
        .await
    }

    pub(super) async fn remove_subscriber_of(&self, id: i64) -> Result<Option<Subscriber>, Error> {
        self.call(async move |client| {
            let tx = client.transaction().await?;
            let found = tx
                .query_opt(
                    &format!("DELETE FROM sh_subscribers WHERE id = $1 RETURNING {COLUMNS}"),
                    &[&id],
                )
                .await?
                .as_ref()
                .map(row);
            if found.is_some() {
                tx.execute("DELETE FROM sh_deliveries WHERE subscriber = $1", &[&id])
                    .await?;
            }
            tx.commit().await?;
            Ok(found)
        })
        .await
    }

    pub(super) async fn subscribers_of(&self) -> Result<Vec<Subscriber>, Error> {
        self.call(async move |client| {
            Ok(client
                .query(
                    &format!("SELECT {COLUMNS} FROM sh_subscribers ORDER BY id LIMIT $1"),
                    &[&MAX_READ],
                )
                .await?
                .iter()
                .map(row)
                .collect())
        })
        .await
    }

    pub(super) async fn claim_delivery_of(
        &self,
        event: &str,
        subscriber: i64,
        at: i64,
    ) -> Result<bool, Error> {
        self.call(async move |client| {
            Ok(client
                .execute(
                    "INSERT INTO sh_deliveries (event, subscriber, at) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                    &[&event, &subscriber, &at],
                )
                .await?
                == 1)
        })
        .await
    }

    pub(super) async fn claim_deliveries_of(
        &self,
        event: &str,
        subscribers: &[i64],
        at: i64,
    ) -> Result<Vec<i64>, Error> {
        self.call(async move |client| {
            Ok(client
                .query(
                    "INSERT INTO sh_deliveries (event, subscriber, at)
                     SELECT $1, s, $3 FROM unnest($2::bigint[]) AS s
                     ON CONFLICT DO NOTHING RETURNING subscriber",
                    &[&event, &subscribers, &at],
                )
                .await?
                .iter()
                .map(|row| row.get::<_, i64>(0))
                .collect())
        })
        .await
    }

    pub(super) async fn release_delivery_of(
        &self,
        event: &str,
        subscriber: i64,
    ) -> Result<(), Error> {
        self.call(async move |client| {
            client
                .execute(
                    "DELETE FROM sh_deliveries WHERE event = $1 AND subscriber = $2",
                    &[&event, &subscriber],
                )
                .await?;
            Ok(())
        })
        .await
    }
}
