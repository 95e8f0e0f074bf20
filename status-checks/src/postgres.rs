//! PostgreSQL: a query on a reused connection.

use std::fmt;
use std::str::FromStr;

use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_postgres::{Client, NoTls};

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::Error;

/// Runs `SELECT 1` (or a query of yours) on a PostgreSQL connection kept between runs.
///
/// The connection is opened on the first run and reused. A run that fails or is cut off by
/// the timeout closes it: the client is dropped and the task driving the socket aborted, so a
/// server that stops answering never keeps a connection or a task past the timeout. The next
/// run connects again. Connections are made without TLS.
///
/// # Example
///
/// ```
/// use status_checks::postgres::PostgresCheck;
/// use status_core::Dependency;
///
/// let check = PostgresCheck::new("host=127.0.0.1 port=5432 user=app dbname=orders")
///     .unwrap()
///     .query("SELECT count(*) FROM pg_stat_activity");
/// let db = Dependency::builder("primary-db", check).kind("postgres").build().unwrap();
/// # let _ = db;
/// ```
pub struct PostgresCheck {
    config: tokio_postgres::Config,
    query: String,
    connection: Mutex<Option<Connection>>,
    latency: Option<Threshold>,
}

/// A client and the task driving its socket, aborted when dropped.
struct Connection {
    client: Client,
    driver: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl PostgresCheck {
    /// A check of the server described by `config`: a `postgres://` URL or a
    /// `host=… port=… user=…` string.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `config` does not parse.
    pub fn new(config: &str) -> Result<Self, Error> {
        let config = tokio_postgres::Config::from_str(config)
            .map_err(|e| Error::invalid(format!("invalid PostgreSQL configuration: {e}")))?;
        Ok(Self {
            config,
            query: "SELECT 1".to_owned(),
            connection: Mutex::new(None),
            latency: None,
        })
    }

    /// Runs `query` instead of `SELECT 1` (as a simple query: no parameters).
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = query.into();
        self
    }

    /// Grades the query's latency, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }

    async fn connect(&self) -> Result<Connection, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(NoTls).await?;
        let driver = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("postgres check connection ended: {e}");
            }
        });
        Ok(Connection { client, driver })
    }
}

impl Check for PostgresCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let mut slot = self.connection.lock().await;
        // Taken out: if this run is cancelled, the connection is closed with it.
        let connection = match slot.take() {
            Some(c) if !c.client.is_closed() => c,
            _ => match self.connect().await {
                Ok(c) => c,
                Err(e) => return CheckOutcome::from_error(e),
            },
        };
        match connection.client.simple_query(&self.query).await {
            Ok(_) => {
                *slot = Some(connection);
                graded(started.elapsed(), self.latency.as_ref(), "query answered")
            }
            Err(e) => CheckOutcome::from_error(e),
        }
    }
}

impl fmt::Debug for PostgresCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresCheck")
            .field("query", &self.query)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
