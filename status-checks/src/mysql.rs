//! MySQL and MariaDB: a query on a reused connection.

use std::fmt;
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::Error;

/// Runs `SELECT 1` (or a query of yours) on a MySQL or MariaDB connection kept between runs.
///
/// The connection is opened on the first run and reused. A run that fails or is cut off by
/// the timeout drops it: its socket is closed at once (no goodbye is sent to a server that
/// may not answer), so a server that stops answering never keeps a connection or a task past
/// the timeout. The next run connects again. TLS as the URL asks (`?require_ssl=true`).
///
/// # Example
///
/// ```
/// use status_checks::mysql::MysqlCheck;
/// use status_core::Dependency;
///
/// let check = MysqlCheck::new("mysql://app:secret@127.0.0.1:3306/orders").unwrap();
/// let db = Dependency::builder("orders-db", check).kind("mysql").build().unwrap();
/// # let _ = db;
/// ```
pub struct MysqlCheck {
    opts: Opts,
    query: String,
    connection: Mutex<Option<Conn>>,
    latency: Option<Threshold>,
}

impl MysqlCheck {
    /// A check of the server at `url` (`mysql://user:password@host:port/database`).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `url` does not parse (the message masks its password).
    pub fn new(url: &str) -> Result<Self, Error> {
        let opts = Opts::from_url(url).map_err(|e| {
            Error::invalid(format!(
                "invalid MySQL URL {}: {e}",
                status_core::mask_credentials(url)
            ))
        })?;
        // No pool behind the connection, and a connect that gives up on its own: the
        // dependency's timeout still cuts a run first.
        let opts = OptsBuilder::from_opts(opts)
            .wait_timeout(None)
            .conn_ttl(None::<Duration>)
            .into();
        Ok(Self {
            opts,
            query: "SELECT 1".to_owned(),
            connection: Mutex::new(None),
            latency: None,
        })
    }

    /// Runs `query` instead of `SELECT 1` (as a text query; its rows are read and dropped).
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
}

impl Check for MysqlCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let mut slot = self.connection.lock().await;
        // Taken out: if this run is cancelled, the connection is dropped with it.
        let mut connection = match slot.take() {
            Some(connection) => connection,
            None => match Conn::new(self.opts.clone()).await {
                Ok(connection) => connection,
                Err(e) => return CheckOutcome::from_error(e),
            },
        };
        match connection.query_drop(&self.query).await {
            Ok(()) => {
                let (major, minor, patch) = connection.server_version();
                *slot = Some(connection);
                graded(
                    started.elapsed(),
                    self.latency.as_ref(),
                    &format!("server {major}.{minor}.{patch} answered"),
                )
            }
            Err(e) => CheckOutcome::from_error(e),
        }
    }
}

impl fmt::Debug for MysqlCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlCheck")
            .field("host", &self.opts.ip_or_hostname())
            .field("port", &self.opts.tcp_port())
            .field("query", &self.query)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
