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
/// run connects again. Connections are made without TLS. At most [`MAX_ANSWER`] bytes are
/// read in answer to each message (to a single host): a server that streams more fails the
/// run at once, rather than being buffered until the timeout.
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
        let parsed = tokio_postgres::Config::from_str(config).map_err(|e| {
            Error::invalid(format!(
                "invalid PostgreSQL configuration: {}",
                crate::address::why(
                    config,
                    &["postgres", "postgresql"],
                    "postgres://user:password@host:5432/db, or host=… port=… user=…",
                    &e.to_string(),
                )
            ))
        })?;
        let config = parsed;
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

    /// A new connection. To one host (over TCP or its Unix socket), at most [`MAX_ANSWER`]
    /// bytes are read in answer to each message sent; to several, as the client connects
    /// (it picks among them), unbounded.
    async fn connect(&self) -> Result<Connection, Failure> {
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        match self.config.get_hosts() {
            [tokio_postgres::config::Host::Tcp(host)] => {
                let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
                stream.set_nodelay(true)?;
                self.raw(stream).await
            }
            #[cfg(unix)]
            [tokio_postgres::config::Host::Unix(dir)] => {
                let socket = dir.join(format!(".s.PGSQL.{port}"));
                self.raw(tokio::net::UnixStream::connect(socket).await?)
                    .await
            }
            _ => {
                let (client, connection) = self.config.connect(NoTls).await?;
                Ok(Connection::driven(client, connection))
            }
        }
    }

    /// The protocol over `stream`, bounded.
    async fn raw<S>(&self, stream: S) -> Result<Connection, Failure>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let bounded = crate::bounded::Bounded::new(stream, MAX_ANSWER);
        let (client, connection) = self.config.connect_raw(bounded, NoTls).await?;
        Ok(Connection::driven(client, connection))
    }
}

/// The most bytes read in answer to one message (the startup's, or the query's): a check's
/// query should answer little.
pub const MAX_ANSWER: usize = 1024 * 1024;

/// Why a connection could not be made.
#[derive(Debug)]
enum Failure {
    Io(std::io::Error),
    Postgres(tokio_postgres::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Postgres(e)
    }
}

impl Connection {
    /// `client`, its socket driven by `connection` on a task of its own.
    fn driven<S, T>(client: Client, connection: tokio_postgres::Connection<S, T>) -> Self
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let driver = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("postgres check connection ended: {e}");
            }
        });
        Self { client, driver }
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
                Err(Failure::Io(e)) => return CheckOutcome::from_error(e),
                Err(Failure::Postgres(e)) => return CheckOutcome::from_error(e),
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
