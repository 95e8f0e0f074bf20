//! NATS: a round trip to the server (PING, PONG), and JetStream's availability when asked.
//!
//! The check speaks the little of the client protocol it needs itself (`INFO`, `CONNECT`,
//! `PING`, and for JetStream one request), so that every read is bounded: a line at most
//! [`MAX_LINE`] bytes, a message's payload at most [`MAX_PAYLOAD`]. A client library buffers
//! whatever a server streams until the run's timeout.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio::time::Instant;

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

/// A stream the check reads and writes, over TCP or TLS.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

/// A connection: its stream, what was read past the last line, and the server's version.
struct Connection {
    stream: Box<dyn Stream>,
    buffer: Vec<u8>,
    version: String,
}

/// Why a run failed: the I/O error, or what the server did that NATS does not (OUTAGE).
type Failure = std::io::Error;

/// A failure that is the server's doing, said.
fn failure(why: impl Into<String>) -> Failure {
    std::io::Error::new(std::io::ErrorKind::InvalidData, why.into())
}

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

impl Connection {
    /// The next line (`what`, for the error), without its end; at most [`MAX_LINE`] bytes.
    async fn line(&mut self, what: &str) -> Result<Vec<u8>, Failure> {
        loop {
            if let Some(at) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                let line = self.buffer[..at].to_vec();
                self.buffer.drain(..at + 2);
                return Ok(line);
            }
            if self.buffer.len() > MAX_LINE {
                return Err(failure(format!(
                    "the server sent more than {} KiB without ending {what}: not a NATS \
                     server, or a hostile one",
                    MAX_LINE / 1024
                )));
            }
            self.fill().await?;
        }
    }

    /// `n` bytes and the line's end after them; `n` at most [`MAX_PAYLOAD`].
    async fn payload(&mut self, n: usize) -> Result<Vec<u8>, Failure> {
        if n > MAX_PAYLOAD {
            return Err(failure(format!(
                "the server announced a message of {n} bytes (at most {} KiB is read)",
                MAX_PAYLOAD / 1024
            )));
        }
        while self.buffer.len() < n + 2 {
            self.fill().await?;
        }
        let payload = self.buffer[..n].to_vec();
        self.buffer.drain(..n + 2);
        Ok(payload)
    }

    /// Reads what the server sent next into the buffer.
    async fn fill(&mut self) -> Result<(), Failure> {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(failure("the server closed the connection"));
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// Reads operations until a PONG: answers the server's PINGs, skips `+OK` and `INFO`,
    /// fails on `-ERR`; a message is read (bounded) and dropped.
    async fn until_pong(&mut self) -> Result<(), Failure> {
        loop {
            match self.op().await? {
                Op::Pong => return Ok(()),
                Op::Message { .. } => {}
            }
        }
    }

    /// The next operation the check cares about (PONG or a message); the rest handled here.
    async fn op(&mut self) -> Result<Op, Failure> {
        loop {
            let line = self.line("a line").await?;
            let text = String::from_utf8_lossy(&line);
            let mut words = text.split_ascii_whitespace();
            let verb = words.next().unwrap_or_default().to_ascii_uppercase();
            match verb.as_str() {
                "PONG" => return Ok(Op::Pong),
                "PING" => self.stream.write_all(b"PONG\r\n").await?,
                "+OK" | "INFO" | "" => {}
                "-ERR" => {
                    let why = text[4..].trim().trim_matches('\'');
                    return Err(failure(format!("the server refused: {why}")));
                }
                // MSG subject sid [reply] bytes; HMSG subject sid [reply] header total.
                "MSG" | "HMSG" => {
                    let numbers: Vec<&str> = words.collect();
                    let parse = |s: Option<&&str>| s.and_then(|s| s.parse::<usize>().ok());
                    let total = parse(numbers.last()).ok_or_else(|| bad(&text))?;
                    let headers = if verb == "HMSG" {
                        parse(numbers.get(numbers.len().wrapping_sub(2)))
                            .ok_or_else(|| bad(&text))?
                    } else {
                        0
                    };
                    if headers > total {
                        return Err(bad(&text));
                    }
                    let payload = self.payload(total).await?;
                    let sid = numbers.get(1).copied().unwrap_or_default().to_owned();
                    return Ok(Op::Message {
                        sid,
                        headers: payload[..headers].to_vec(),
                        body: payload[headers..].to_vec(),
                    });
                }
                _ => return Err(bad(&text)),
            }
        }
    }

    /// Asks JetStream for the account's information (`$JS.API.INFO`), read only as far as an
    /// error: the answer's shape changes between server versions; an error or no responder
    /// (JetStream off) is what matters.
    async fn jetstream_info(&mut self) -> Result<Result<(), String>, Failure> {
        let inbox = format!(
            "_INBOX.status.{:016x}",
            status_core::Rng::from_entropy().next_u64()
        );
        let ask = format!("SUB {inbox} 1\r\nPUB $JS.API.INFO {inbox} 0\r\n\r\nPING\r\n");
        self.stream.write_all(ask.as_bytes()).await?;
        let mut answer = None;
        let mut ponged = false;
        let wait = async {
            while answer.is_none() || !ponged {
                match self.op().await? {
                    Op::Pong => ponged = true,
                    Op::Message { sid, headers, body } if sid == "1" => {
                        answer = Some((headers, body));
                    }
                    Op::Message { .. } => {}
                }
            }
            Ok::<_, Failure>(())
        };
        // JetStream answers at once, or says it is off at once (no responders); a server
        // too old to say so is given two seconds.
        let waited = tokio::time::timeout(Duration::from_secs(2), wait).await;
        // Unsubscribed whatever came: the next run subscribes sid 1 again.
        self.stream.write_all(b"UNSUB 1\r\n").await?;
        match waited {
            Err(_) => return Ok(Err("no answer within 2 s".to_owned())),
            Ok(Err(failure)) => return Err(failure),
            Ok(Ok(())) => {}
        }
        let (headers, body) = answer.unwrap_or_default();
        // No responders: `NATS/1.0 503` in the headers.
        let status = String::from_utf8_lossy(&headers);
        if status.starts_with("NATS/1.0 503") {
            return Ok(Err("no responders (JetStream is off)".to_owned()));
        }
        let info: serde_json::Value = match serde_json::from_slice(&body) {
            Ok(info) => info,
            Err(e) => return Ok(Err(format!("an answer that is not JSON: {e}"))),
        };
        Ok(match info.get("error") {
            Some(error) => Err(error
                .get("description")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("an error")
                .to_owned()),
            None => Ok(()),
        })
    }
}

/// What the server sent that the check waits for.
enum Op {
    Pong,
    Message {
        sid: String,
        headers: Vec<u8>,
        body: Vec<u8>,
    },
}

/// A line the protocol has no place for.
fn bad(line: &str) -> Failure {
    let shown: String = line.chars().take(64).filter(|c| !c.is_control()).collect();
    failure(format!("the server sent what NATS does not: {shown:?}"))
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
