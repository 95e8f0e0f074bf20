//! memcached: a `version` round trip over the text protocol, on a connection kept between
//! runs.

use std::fmt;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::CheckStatus;

/// The longest answer line read: `VERSION 1.6.21` is a few bytes; a peer that sends more
/// without a newline is not memcached.
const MAX_LINE: usize = 256;

/// Asks a memcached server its `version` over a connection kept between runs.
///
/// The text protocol is one line each way, so no client crate is needed. A run that fails
/// or is cut off by the timeout drops the connection (closing the socket); the next run
/// opens a new one, so a hung server never holds a connection past the timeout.
///
/// # Example
///
/// ```
/// use status_checks::memcached::MemcachedCheck;
/// use status_core::Dependency;
///
/// let check = MemcachedCheck::new("127.0.0.1:11211");
/// let sessions = Dependency::builder("sessions", check).kind("memcached").build().unwrap();
/// # let _ = sessions;
/// ```
pub struct MemcachedCheck {
    address: String,
    connection: Mutex<Option<BufReader<TcpStream>>>,
    latency: Option<Threshold>,
}

impl MemcachedCheck {
    /// A check of the server at `address` (`host:port`).
    #[must_use]
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            connection: Mutex::new(None),
            latency: None,
        }
    }

    /// Grades the round trip's latency, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

/// One `version` exchange: the version the server gave, or the outcome of a failure (with
/// its error chain when the socket failed).
async fn version(connection: &mut BufReader<TcpStream>) -> Result<String, CheckOutcome> {
    connection
        .get_mut()
        .write_all(b"version\r\n")
        .await
        .map_err(CheckOutcome::from_error)?;
    let mut line = Vec::new();
    (&mut *connection)
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .await
        .map_err(CheckOutcome::from_error)?;
    let line = String::from_utf8_lossy(&line);
    let failed = |message: String| CheckOutcome::new(CheckStatus::Outage, message);
    if line.is_empty() {
        return Err(failed("the server closed the connection".to_owned()));
    }
    if !line.ends_with('\n') {
        return Err(failed(format!(
            "no answer line within {MAX_LINE} bytes: {:?}",
            line.chars().take(40).collect::<String>()
        )));
    }
    line.trim_end()
        .strip_prefix("VERSION ")
        .map(str::to_owned)
        .ok_or_else(|| {
            failed(format!(
                "unexpected answer to version: {:?}",
                line.trim_end()
            ))
        })
}

impl Check for MemcachedCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let mut slot = self.connection.lock().await;
        // Taken out: if this run is cancelled, the connection is dropped with it. A kept
        // connection that fails (the server restarted, a proxy closed it) gets one retry on
        // a new one, whose failure is the answer.
        let mut kept = slot.take();
        loop {
            let reused = kept.is_some();
            let mut connection = match kept.take() {
                Some(connection) => connection,
                None => match TcpStream::connect(&self.address).await {
                    Ok(stream) => BufReader::new(stream),
                    Err(e) => return CheckOutcome::from_error(e),
                },
            };
            match version(&mut connection).await {
                Ok(version) => {
                    *slot = Some(connection);
                    return graded(
                        started.elapsed(),
                        self.latency.as_ref(),
                        &format!("memcached {version}"),
                    );
                }
                Err(_) if reused => {}
                Err(outcome) => return outcome,
            }
        }
    }
}

impl fmt::Debug for MemcachedCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemcachedCheck")
            .field("address", &self.address)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
