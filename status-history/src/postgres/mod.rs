//! [`PostgresHistory`]: history in PostgreSQL, one database for a fleet. Every row is tagged
//! with the instance and data center that wrote it; reads merge every instance (a
//! dependency's time in each level is the fleet's). Each instance keeps its mutes, and reads
//! the others' and the mutes ended early ([`HistoryStore::peer_mutes`],
//! [`HistoryStore::mute_ends`]) so that an act holds across the fleet; overrides and state
//! are each instance's own.
//!
//! [`HistoryStore::peer_mutes`]: crate::HistoryStore::peer_mutes
//! [`HistoryStore::mute_ends`]: crate::HistoryStore::mute_ends

mod adapter;
mod announce;
mod exclusions;
mod incidents;
mod read;
mod schema;
mod subscribers;
mod write;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use tokio_postgres::{Client, NoTls};

use self::schema::{migrate, MIGRATIONS};
use crate::error::Kind;
use crate::model::Series;
use crate::Error;

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
    ) -> Result<Self, Error> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| Error::new(format!("not a PostgreSQL URL: {e}")))?;
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
    pub async fn with_client<T>(&self, f: impl AsyncFnOnce(&Client) -> T) -> Result<T, Error> {
        let guard = self.client.lock().await;
        let client = guard.as_ref().ok_or_else(not_open)?;
        Ok(f(client).await)
    }

    /// Runs `call` on the connection, bounded in time; a connection that closed or did not
    /// answer is dropped (the driver connects again).
    async fn call<T>(
        &self,
        call: impl AsyncFnOnce(&mut Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, Error> {
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
                Err(Error::of(
                    Kind::Unavailable,
                    format!(
                        "PostgreSQL did not answer within {} s",
                        CALL_TIMEOUT.as_secs()
                    ),
                ))
            }
        }
    }
}

fn not_open() -> Error {
    Error::of(Kind::Unavailable, "not connected")
}

pub(super) fn pg(e: &tokio_postgres::Error) -> Error {
    use tokio_postgres::error::SqlState;
    let kind = match e.code() {
        Some(code) if *code == SqlState::DISK_FULL => Kind::Full,
        Some(code) if code.code().starts_with("08") => Kind::Unavailable,
        Some(_) => Kind::Other,
        None => Kind::Unavailable,
    };
    Error::of(
        kind,
        match e.as_db_error() {
            Some(db) => format!("PostgreSQL: {}", db.message()),
            None => format!("PostgreSQL: {e}"),
        },
    )
}

/// The advisory lock's first key for an instance id: the second is the id's hash.
const INSTANCE_LOCK: i32 = 0x5354_4849; // "STHI"

/// A stable 32-bit hash of `s` (FNV-1a): the advisory lock of an instance id.
fn fnv1a(s: &str) -> i32 {
    let hash = s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    i32::from_ne_bytes(hash.to_ne_bytes())
}

/// Takes the session's advisory lock on `instance`: one process per instance id, so that
/// two never write each other's mutes, overrides and runs. Refused with who holds it.
async fn claim(client: &Client, instance: &str) -> Result<(), Error> {
    let key = fnv1a(instance);
    let got: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock($1, $2)",
            &[&INSTANCE_LOCK, &key],
        )
        .await
        .map_err(|e| pg(&e))?
        .get(0);
    if got {
        return Ok(());
    }
    let holder = client
        .query_opt(
            "SELECT a.pid, coalesce(host(a.client_addr), 'a local socket'), a.backend_start::text
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted
               AND l.classid = $1::int4::oid AND l.objid = $2::int4::oid",
            &[&INSTANCE_LOCK, &key],
        )
        .await
        .ok()
        .flatten()
        .map(|r| {
            format!(
                " (server process {} for a client at {}, connected since {})",
                r.get::<_, i32>(0),
                r.get::<_, String>(1),
                r.get::<_, String>(2)
            )
        })
        .unwrap_or_default();
    Err(Error::of(
        Kind::Locked,
        format!(
            "the instance id {instance:?} is in use by another process on this database{holder}: \
             give each instance an id of its own; nothing is written meanwhile"
        ),
    ))
}

impl PostgresHistory {
    /// Connects (when not connected), claims the instance, migrates, and starts the run at
    /// `now` (ms): the store's `open`.
    async fn open_at(&self, now: i64) -> Result<(), Error> {
        let mut guard = self.client.lock().await;
        if guard.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        let (mut client, connection) =
            tokio::time::timeout(CALL_TIMEOUT, self.config.connect(NoTls))
                .await
                .map_err(|_| {
                    Error::of(
                        Kind::Unavailable,
                        "PostgreSQL did not answer the connection",
                    )
                })?
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
        claim(&client, &self.instance).await?;
        tokio::time::timeout(CALL_TIMEOUT, migrate(&mut client))
            .await
            .map_err(|_| Error::new("PostgreSQL did not answer the migration"))??;
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
    }

    /// Lets go of the instance's lock and the connection: the store's `close`.
    async fn close_now(&self) -> Result<(), Error> {
        // The instance's advisory lock is let go at once, then the connection goes (which
        // would let go of it too, but only once the server notices: a process started
        // right after might be refused meanwhile).
        if let Some(client) = self.client.lock().await.take() {
            let key = fnv1a(&self.instance);
            let unlocked = client
                .execute("SELECT pg_advisory_unlock($1, $2)", &[&INSTANCE_LOCK, &key])
                .await;
            if let Err(e) = unlocked {
                tracing::debug!("the instance's lock goes with its connection: {e}");
            }
        }
        self.open.store(false, Ordering::Release);
        Ok(())
    }
}
