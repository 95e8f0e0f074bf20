//! NATS: a round trip to the server (PING, PONG), and JetStream's availability when asked.
//!
//! The check speaks the little of the client protocol it needs itself (`INFO`, `CONNECT`,
//! `PING`, and for JetStream one request), so that every read is bounded: a line at most
//! [`MAX_LINE`] bytes, a message's payload at most [`MAX_PAYLOAD`]. A client library buffers
//! whatever a server streams until the run's timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;
use tokio::time::Instant;

mod wire;

use self::wire::{failure, Connection, Failure};
use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::{CheckStatus, Error};

/// Sends a PING on a NATS connection kept between runs and waits for its PONG and, when
/// asked, asks JetStream for the account's information.
///
/// - OUTAGE when the server cannot be reached, refuses the login, or does not answer;
/// - MAJOR when JetStream was asked for and is not available (core NATS works: publishers
///   without persistence go on);
/// - else OK, graded by the round trip's latency when asked, with the server's version.
///
/// A run that fails or is cut off by the timeout drops the connection, and the next run
/// connects again, so a server that hangs never holds a connection past the timeout. Every
/// read is bounded ([`MAX_LINE`], [`MAX_PAYLOAD`]): a server streaming without end fails the
/// run at once. Credentials come from the URL (`nats://user:password@host`, or a token as
/// `nats://token@host`); `tls://`, or a server that requires TLS, is verified against the
/// web's roots. JetStream is asked with a bare `$JS.API.INFO` request, read only for an
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
    host: String,
    port: u16,
    tls: bool,
    login: Login,
    jetstream: bool,
    connection: Mutex<Option<Connection>>,
    latency: Option<Threshold>,
}

/// Who the check says it is.
#[derive(Clone, PartialEq, Eq)]
enum Login {
    None,
    Token(String),
    User(String, String),
}

/// The longest line read from a server (`INFO {…}` is under 2 KiB).
pub const MAX_LINE: usize = 64 * 1024;

/// The largest message payload read (JetStream's account information is a few hundred bytes).
pub const MAX_PAYLOAD: usize = 64 * 1024;

impl NatsCheck {
    /// A check of the server at `url` (`nats://host:4222`, `tls://…`; credentials in the URL
    /// as NATS takes them: `user:password@` or `token@`).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `url` is a `nats://` (or `tls://`) URL with a host.
    pub fn new(url: &str) -> Result<Self, Error> {
        let invalid = || {
            Error::invalid(format!(
                "not a NATS URL (nats://host:port): {}",
                status_core::mask_credentials(url)
            ))
        };
        let tls = url.starts_with("tls://");
        if !(tls || url.starts_with("nats://")) {
            return Err(invalid());
        }
        let parsed = url::Url::parse(url).map_err(|_| invalid())?;
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| Error::invalid("a NATS URL needs a host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        // Percent-decoded; a `+` in userinfo is itself, not a space as in a form.
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let login = match (parsed.username(), parsed.password()) {
            ("", _) => Login::None,
            (token, None) => Login::Token(decode(token)),
            (user, Some(password)) => Login::User(decode(user), decode(password)),
        };
        Ok(Self {
            url: url.to_owned(),
            host,
            port: parsed.port().unwrap_or(4222),
            tls,
            login,
            jetstream: false,
            connection: Mutex::new(None),
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

    /// Connects: the server's greeting, TLS when asked or required, the login.
    async fn connect(&self) -> Result<Connection, Failure> {
        let target = format!("{}:{}", self.host, self.port);
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot connect to {target}: {e}"))
            })?;
        tcp.set_nodelay(true)?;
        let mut connection = Connection {
            stream: Box::new(tcp),
            buffer: Vec::new(),
            version: String::new(),
        };
        let greeting = connection.line("its greeting").await?;
        let Some(info) = greeting
            .strip_prefix(b"INFO ")
            .or_else(|| greeting.strip_prefix(b"INFO\t"))
        else {
            let shown: String = String::from_utf8_lossy(&greeting[..greeting.len().min(64)])
                .chars()
                .filter(|c| !c.is_control())
                .collect();
            return Err(failure(format!(
                "{target} did not greet as a NATS server does: {shown:?}"
            )));
        };
        let info: serde_json::Value = serde_json::from_slice(info)
            .map_err(|e| failure(format!("{target} sent an INFO that is not JSON: {e}")))?;
        connection.version = info["version"].as_str().unwrap_or("?").to_owned();
        let required = info["tls_required"].as_bool().unwrap_or(false);
        if self.tls || required {
            connection = self.upgrade(connection).await?;
        }
        let mut hello = serde_json::json!({
            "verbose": false,
            "pedantic": false,
            "tls_required": self.tls || required,
            "name": "status-check",
            "lang": "rust",
            "version": env!("CARGO_PKG_VERSION"),
            "protocol": 1,
            "echo": false,
            "headers": true,
            "no_responders": true,
        });
        match &self.login {
            Login::None => {}
            Login::Token(token) => hello["auth_token"] = token.clone().into(),
            Login::User(user, password) => {
                hello["user"] = user.clone().into();
                hello["pass"] = password.clone().into();
            }
        }
        let connect = format!("CONNECT {hello}\r\n");
        connection.stream.write_all(connect.as_bytes()).await?;
        Ok(connection)
    }

    /// The connection over TLS, verified for this host against the web's roots.
    async fn upgrade(&self, connection: Connection) -> Result<Connection, Failure> {
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| failure(e.to_string()))?
        .with_root_certificates(crate::roots::web())
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .map_err(|e| failure(format!("not a name to verify: {e}")))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, connection.stream)
            .await
            .map_err(|e| failure(format!("TLS: {e}")))?;
        Ok(Connection {
            stream: Box::new(stream),
            buffer: Vec::new(),
            version: connection.version,
        })
    }

    /// One run on `connection`: PING until its PONG, then JetStream when asked. `Ok(Err(…))`:
    /// JetStream is not available (the connection is fine).
    async fn run(
        &self,
        connection: &mut Connection,
    ) -> Result<(Duration, Result<(), String>), Failure> {
        let started = Instant::now();
        connection.stream.write_all(b"PING\r\n").await?;
        connection.until_pong().await?;
        let elapsed = started.elapsed();
        if !self.jetstream {
            return Ok((elapsed, Ok(())));
        }
        Ok((elapsed, connection.jetstream_info().await?))
    }
}

impl Check for NatsCheck {
    async fn check(&self) -> CheckOutcome {
        let mut slot = self.connection.lock().await;
        // Taken out: if this run is cancelled, the connection is dropped with it.
        let mut connection = match slot.take() {
            Some(connection) => connection,
            None => match self.connect().await {
                Ok(connection) => connection,
                Err(e) => return CheckOutcome::from_error(e),
            },
        };
        let (round_trip, jetstream) = match self.run(&mut connection).await {
            Ok(answer) => answer,
            Err(e) => return CheckOutcome::from_error(e),
        };
        let version = connection.version.clone();
        *slot = Some(connection);
        if let Err(why) = jetstream {
            return CheckOutcome::new(
                CheckStatus::Major,
                format!("JetStream is not available: {why}"),
            );
        }
        let what = if self.jetstream {
            format!("nats-server {version} with JetStream, round trip")
        } else {
            format!("nats-server {version}, round trip")
        };
        graded(round_trip, self.latency.as_ref(), &what)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_from_the_url_percent_decoded() {
        let check = NatsCheck::new("nats://app:a+b%40c@127.0.0.1:4223").unwrap();
        assert!(check.login == Login::User("app".into(), "a+b@c".into()));
        assert_eq!((check.host.as_str(), check.port), ("127.0.0.1", 4223));
        let token = NatsCheck::new("tls://t0k%2Fen@example.com").unwrap();
        assert!(token.login == Login::Token("t0k/en".into()));
        assert!(token.tls && token.port == 4222);
        assert!(NatsCheck::new("nats://h").unwrap().login == Login::None);
    }
}
