//! Redis: PING over a reused multiplexed connection.

use std::fmt;

use redis::aio::MultiplexedConnection;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::Error;

/// PINGs a Redis server over a multiplexed connection kept between runs.
///
/// The connection is opened on the first run and reused; a run that fails or is cut off by
/// the timeout drops it (closing the socket), and the next run opens a new one, so a hung
/// server never keeps a connection past the timeout. At most [`MAX_REPLY`] bytes are read in
/// answer to one command (a PONG is seven): a server that streams more fails the run at
/// once, rather than being buffered until the timeout.
///
/// # Example
///
/// ```
/// use status_checks::redis::RedisCheck;
/// use status_core::check::Threshold;
/// use status_core::Dependency;
///
/// let check = RedisCheck::new("redis://127.0.0.1:6379/")
///     .unwrap()
///     .latency(Threshold::at_most(5.0, 50.0, 500.0).unwrap());
/// let cache = Dependency::builder("cache", check).kind("redis").build().unwrap();
/// # let _ = cache;
/// ```
pub struct RedisCheck {
    client: redis::Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    latency: Option<Threshold>,
}

impl RedisCheck {
    /// A check of the server at `url` (`redis://host:port/db`, `rediss://…` for TLS when the
    /// `redis` crate is built with it).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL the Redis client cannot parse.
    pub fn new(url: &str) -> Result<Self, Error> {
        let client = redis::Client::open(url).map_err(|e| {
            Error::invalid(format!(
                "invalid Redis URL: {}",
                crate::address::redis(url, &e)
            ))
        })?;
        Ok(Self {
            client,
            connection: Mutex::new(None),
            latency: None,
        })
    }

    /// Grades the PING's latency, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

/// The most bytes read in answer to one command (the handshake's or PING).
pub const MAX_REPLY: usize = 64 * 1024;

impl RedisCheck {
    /// A new connection, reading at most [`MAX_REPLY`] bytes an answer (over TCP or a Unix
    /// socket; other addresses, as the client opens them).
    async fn connect(&self) -> redis::RedisResult<MultiplexedConnection> {
        let info = self.client.get_connection_info();
        match &info.addr {
            redis::ConnectionAddr::Tcp(host, port) => {
                let stream = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                stream.set_nodelay(true)?;
                multiplexed(&info.redis, stream).await
            }
            #[cfg(unix)]
            redis::ConnectionAddr::Unix(path) => {
                multiplexed(&info.redis, tokio::net::UnixStream::connect(path).await?).await
            }
            _ => self.client.get_multiplexed_async_connection().await,
        }
    }
}

/// A multiplexed connection over `stream`, bounded, its driver spawned (it ends with the
/// connection).
async fn multiplexed<S>(
    info: &redis::RedisConnectionInfo,
    stream: S,
) -> redis::RedisResult<MultiplexedConnection>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let bounded = crate::bounded::Bounded::new(stream, MAX_REPLY);
    let (connection, driver) = MultiplexedConnection::new(info, bounded).await?;
    tokio::spawn(driver);
    Ok(connection)
}

impl Check for RedisCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let mut slot = self.connection.lock().await;
        // Taken out: if this run is cancelled, the connection is dropped with it.
        let mut connection = match slot.take() {
            Some(connection) => connection,
            None => match self.connect().await {
                Ok(connection) => connection,
                Err(e) => return CheckOutcome::from_error(e),
            },
        };
        match redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
        {
            Ok(reply) if reply == "PONG" => {
                *slot = Some(connection);
                graded(started.elapsed(), self.latency.as_ref(), "PONG")
            }
            Ok(reply) => CheckOutcome::new(
                status_core::CheckStatus::Outage,
                format!("unexpected reply to PING: {reply:?}"),
            ),
            Err(e) => CheckOutcome::from_error(e),
        }
    }
}

impl fmt::Debug for RedisCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisCheck")
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
