//! NATS: a round trip to the server (PING, PONG), and JetStream's availability when asked.

use std::fmt;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::{Client, ConnectOptions};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::{CheckStatus, Error};

/// Flushes a NATS connection kept between runs (a PING answered by a PONG) and, when asked,
/// asks JetStream for the account's information.
///
/// - OUTAGE when the server cannot be reached or does not answer;
/// - MAJOR when JetStream was asked for and is not available (core NATS works: publishers
///   without persistence go on);
/// - else OK, graded by the round trip's latency when asked, with the server's version.
///
/// A client that lost its connection is not reused (its own reconnection tries once); a run
/// that fails or is cut off by the timeout drops the client, closing its connection, and
/// the next run connects again, so a server that hangs never holds a connection or a task
/// past the timeout. JetStream is asked with a bare `$JS.API.INFO` request, read only for an
/// error, so servers from 2.9 on answer it alike.
///
/// # Example
///
/// ```
/// use status_checks::nats::NatsCheck;
/// use status_core::Dependency;
///
/// let check = NatsCheck::new("nats://127.0.0.1:4222").unwrap().jetstream(true);
/// let events = Dependency::builder("events", check).kind("nats").build().unwrap();
/// # let _ = events;
/// ```
pub struct NatsCheck {
    url: String,
    /// `host:port` the greeting is read from, found once from the URL.
    target: String,
    jetstream: bool,
    client: Mutex<Option<Client>>,
    latency: Option<Threshold>,
}

impl NatsCheck {
    /// A check of the server at `url` (`nats://host:4222`; credentials in the URL as NATS
    /// takes them).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `url` is a `nats://` (or `tls://`) URL with a host.
    pub fn new(url: &str) -> Result<Self, Error> {
        let rest = url
            .strip_prefix("nats://")
            .or_else(|| url.strip_prefix("tls://"))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "not a NATS URL (nats://host:port): {}",
                    status_core::mask_credentials(url)
                ))
            })?;
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        let host = authority.rsplit('@').next().unwrap_or_default();
        if host.is_empty() || host.starts_with(':') {
            return Err(Error::invalid("a NATS URL needs a host"));
        }
        let has_port = host
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
        let target = if has_port {
            host.to_owned()
        } else {
            format!("{host}:4222")
        };
        Ok(Self {
            url: url.to_owned(),
            target,
            jetstream: false,
            client: Mutex::new(None),
            latency: None,
        })
    }

    /// Whether JetStream must be available too (off by default).
    #[must_use]
    pub fn jetstream(mut self, required: bool) -> Self {
        self.jetstream = required;
        self
    }

    /// Grades the round trip's latency, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

impl Check for NatsCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let mut slot = self.client.lock().await;
        // Taken out: if this run is cancelled, the client is dropped with it.
        let client = match slot.take() {
            Some(client) if client.connection_state() == State::Connected => client,
            _ => {
                // The client reads the server's greeting whole, however long: read it here
                // first, bounded, so a peer that streams a line without end costs 64 KiB.
                if let Err(why) = greeting(&self.target).await {
                    return CheckOutcome::from_error(std::io::Error::other(why));
                }
                let options = ConnectOptions::new()
                    .connection_timeout(Duration::from_secs(5))
                    .max_reconnects(1);
                match options.connect(self.url.as_str()).await {
                    Ok(client) => client,
                    Err(e) => return CheckOutcome::from_error(e),
                }
            }
        };
        if let Err(e) = client.flush().await {
            return CheckOutcome::from_error(e);
        }
        let elapsed = started.elapsed();
        let version = client.server_info().version;
        if self.jetstream {
            if let Err(why) = jetstream_info(&client).await {
                *slot = Some(client);
                return CheckOutcome::new(
                    CheckStatus::Major,
                    format!("JetStream is not available: {why}"),
                );
            }
        }
        *slot = Some(client);
        let what = if self.jetstream {
            format!("nats-server {version} with JetStream, round trip")
        } else {
            format!("nats-server {version}, round trip")
        };
        graded(elapsed, self.latency.as_ref(), &what)
    }
}

/// Asks JetStream for the account's information (`$JS.API.INFO`), read only as far as an
/// error: the answer's shape changes between server versions; an error or no responder
/// (JetStream off) is what matters.
/// The longest greeting (`INFO {…}`) read from a server: a real one is under 2 KiB.
pub(crate) const MAX_GREETING: usize = 64 * 1024;

/// The server at `target` (`host:port`) greets as a NATS server does, within [`MAX_GREETING`] bytes and
/// 5 seconds: the first line is `INFO …` (NATS sends it in the clear, TLS or not).
async fn greeting(target: &str) -> Result<(), String> {
    use tokio::io::AsyncReadExt;
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(target)
            .await
            .map_err(|e| format!("cannot connect to {target}: {e}"))?;
        let mut line = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        loop {
            let n = stream
                .read(&mut chunk)
                .await
                .map_err(|e| format!("{target}: {e}"))?;
            if n == 0 {
                return Err(format!(
                    "{target} closed the connection before its greeting"
                ));
            }
            line.extend_from_slice(&chunk[..n]);
            if line.contains(&b'\n') {
                break;
            }
            if line.len() > MAX_GREETING {
                return Err(format!(
                    "{target} sent more than {} KiB without ending its greeting: not a NATS \
                     server, or a hostile one",
                    MAX_GREETING / 1024
                ));
            }
        }
        if line.starts_with(b"INFO ") || line.starts_with(b"INFO\t") {
            Ok(())
        } else {
            let shown: String = String::from_utf8_lossy(&line[..line.len().min(64)])
                .chars()
                .filter(|c| !c.is_control())
                .collect();
            Err(format!(
                "{target} did not greet as a NATS server does: {shown:?}"
            ))
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .map_err(|_| format!("{target}: no greeting within 5 s"))?
}

async fn jetstream_info(client: &Client) -> Result<(), String> {
    let answer = client
        .request("$JS.API.INFO", Default::default())
        .await
        .map_err(|e| e.to_string())?;
    let info: serde_json::Value = serde_json::from_slice(&answer.payload)
        .map_err(|e| format!("an answer that is not JSON: {e}"))?;
    match info.get("error") {
        Some(error) => Err(error
            .get("description")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("an error")
            .to_owned()),
        None => Ok(()),
    }
}

impl fmt::Debug for NatsCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsCheck")
            .field("url", &status_core::mask_credentials(&self.url))
            .field("jetstream", &self.jetstream)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
