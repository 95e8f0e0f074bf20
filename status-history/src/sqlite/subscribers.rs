//! The status page's subscribers and what each was sent, in the SQLite file.

use rusqlite::{params, OptionalExtension};

use super::SqliteStore;
use crate::model::{millis, Subscriber, SubscriberKind};
use crate::Error;

/// The most subscribers one read answers.
pub(crate) const MAX_READ: i64 = 100_000;

const COLUMNS: &str =
    "id, kind, address, components, lang, token, created, confirmed, confirm_sent";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Subscriber> {
    Ok(Subscriber {
        id: r.get(0)?,
        kind: SubscriberKind::parse(&r.get::<_, String>(1)?).unwrap_or(SubscriberKind::Email),
        address: r.get(2)?,
        components: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
        lang: r.get(4)?,
        token: r.get(5)?,
        created: millis(r.get(6)?),
        confirmed: r.get::<_, Option<i64>>(7)?.map(millis),
        confirm_sent: r.get::<_, Option<i64>>(8)?.map(millis),
    })
}

impl SqliteStore {
    /// The subscriber of `kind` at `address`, if any.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn subscriber(
        &self,
        kind: SubscriberKind,
        address: &str,
    ) -> Result<Option<Subscriber>, Error> {
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM subscribers WHERE kind = ?1 AND address = ?2"),
                params![kind.as_str(), address],
                row,
            )
            .optional()
            .map_err(Error::sqlite)
    }

    /// Keeps `s`, or for one of that kind and address already kept, its components,
    /// language, token and last confirmation (its confirmation and creation stay).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn subscribe(&mut self, s: &Subscriber) -> Result<Subscriber, Error> {
        let components = serde_json::to_string(&s.components).unwrap_or_default();
        self.conn
            .execute(
                "INSERT INTO subscribers
                   (kind, address, components, lang, token, created, confirmed, confirm_sent)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (kind, address) DO UPDATE SET
                   components = ?3, lang = ?4, token = ?5, confirm_sent = ?8,
                   confirmed = coalesce(confirmed, ?7)",
                params![
                    s.kind.as_str(),
                    s.address,
                    components,
                    s.lang,
                    s.token,
                    s.created.timestamp_millis(),
                    s.confirmed.map(|t| t.timestamp_millis()),
                    s.confirm_sent.map(|t| t.timestamp_millis()),
                ],
            )
            .map_err(Error::sqlite)?;
        self.subscriber(s.kind, &s.address)?
            .ok_or_else(|| Error::new("the subscriber just kept cannot be read back"))
    }

    /// Confirms the subscriber whose token hashes to `token` (at `at`, ms; a second time
    /// keeps the first); `None` when there is none.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn confirm_subscriber(
        &mut self,
        token: &str,
        at: i64,
    ) -> Result<Option<Subscriber>, Error> {
        self.conn
            .execute(
                "UPDATE subscribers SET confirmed = coalesce(confirmed, ?2) WHERE token = ?1",
                params![token, at],
            )
            .map_err(Error::sqlite)?;
        self.conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM subscribers WHERE token = ?1"),
                [token],
                row,
            )
            .optional()
            .map_err(Error::sqlite)
    }

    /// Removes the subscriber whose token hashes to `token`, and what it was sent; answers
    /// it, or `None` when there is none.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn unsubscribe(&mut self, token: &str) -> Result<Option<Subscriber>, Error> {
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
        let found = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM subscribers WHERE token = ?1"),
                [token],
                row,
            )
            .optional()
            .map_err(Error::sqlite)?;
        if let Some(s) = &found {
            tx.execute("DELETE FROM deliveries WHERE subscriber = ?1", [s.id])
                .map_err(Error::sqlite)?;
            tx.execute("DELETE FROM subscribers WHERE id = ?1", [s.id])
                .map_err(Error::sqlite)?;
        }
        tx.commit().map_err(Error::sqlite)?;
        Ok(found)
    }

    /// Removes the subscriber `id`, and what it was sent; `None` when there is none.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn remove_subscriber(&mut self, id: i64) -> Result<Option<Subscriber>, Error> {
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
        let found = tx
            .query_row(
                &format!("SELECT {COLUMNS} FROM subscribers WHERE id = ?1"),
                [id],
                row,
            )
            .optional()
            .map_err(Error::sqlite)?;
        if found.is_some() {
            tx.execute("DELETE FROM deliveries WHERE subscriber = ?1", [id])
                .map_err(Error::sqlite)?;
            tx.execute("DELETE FROM subscribers WHERE id = ?1", [id])
                .map_err(Error::sqlite)?;
        }
        tx.commit().map_err(Error::sqlite)?;
        Ok(found)
    }

    /// Every subscriber, confirmed or not, by id (at most 100,000).
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn subscribers(&self) -> Result<Vec<Subscriber>, Error> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM subscribers ORDER BY id LIMIT ?1"
            ))
            .and_then(|mut s| s.query_map([MAX_READ], row)?.collect())
            .map_err(Error::sqlite)
    }

    /// Claims the sending of `event` to `subscriber` at `at` (ms): `true` for the first to
    /// claim it, who sends it; `false` when it was claimed already.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn claim_delivery(&mut self, event: &str, subscriber: i64, at: i64) -> Result<bool, Error> {
        self.conn
            .execute(
                "INSERT INTO deliveries (event, subscriber, at) VALUES (?1, ?2, ?3)
                 ON CONFLICT DO NOTHING",
                params![event, subscriber, at],
            )
            .map(|n| n == 1)
            .map_err(Error::sqlite)
    }

    /// Claims the sending of `event` to each of `subscribers` at `at`, in one transaction:
    /// answers those claimed here (the others were claimed already).
    ///
    /// # Errors
    ///
    /// When SQLite fails (then none is claimed).
    pub fn claim_deliveries(
        &mut self,
        event: &str,
        subscribers: &[i64],
        at: i64,
    ) -> Result<Vec<i64>, Error> {
        let tx = self.conn.transaction().map_err(Error::sqlite)?;
        let mut claimed = Vec::with_capacity(subscribers.len());
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO deliveries (event, subscriber, at) VALUES (?1, ?2, ?3)
                     ON CONFLICT DO NOTHING",
                )
                .map_err(Error::sqlite)?;
            for &subscriber in subscribers {
                if insert
                    .execute(params![event, subscriber, at])
                    .map_err(Error::sqlite)?
                    == 1
                {
                    claimed.push(subscriber);
                }
            }
        }
        tx.commit().map_err(Error::sqlite)?;
        Ok(claimed)
    }

    /// Lets a claim go (its sending failed): it is tried again.
    ///
    /// # Errors
    ///
    /// When SQLite fails.
    pub fn release_delivery(&mut self, event: &str, subscriber: i64) -> Result<(), Error> {
        self.conn
            .execute(
                "DELETE FROM deliveries WHERE event = ?1 AND subscriber = ?2",
                params![event, subscriber],
            )
            .map(|_| ())
            .map_err(Error::sqlite)
    }
}
