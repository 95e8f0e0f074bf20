//! AMQP 0-9-1 (RabbitMQ): a channel opened on a reused connection, and optionally a queue's
//! depth against a threshold.

use std::fmt;
use std::sync::Arc;

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::{Connection, ConnectionProperties};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::{CheckStatus, Error};

/// Opens (and closes) a channel on an AMQP connection kept between runs, a round trip to the
/// broker; with [`queue_depth`](Self::queue_depth), also reads a queue's depth (a passive
/// declare: the queue is never created) and grades it.
///
/// - OUTAGE when the broker cannot be reached, refuses the login, or does not answer;
/// - MAJOR when the queue asked for does not exist;
/// - the queue's depth against its threshold (the depth is the value), else OK, graded by
///   latency when asked.
///
/// A run that fails or is cut off by the timeout drops the connection; the next run
/// connects again, so a broker that hangs never holds a connection past the timeout. lapin
/// drives each connection from tasks of its own, which outlive a connect abandoned halfway;
/// so each connection runs on a one-thread runtime of its own, shut down (its socket closed)
/// when the connection is dropped.
///
/// # Example
///
/// ```
/// use status_checks::amqp::AmqpCheck;
/// use status_core::check::Threshold;
/// use status_core::Dependency;
///
/// let check = AmqpCheck::new("amqp://guest:guest@127.0.0.1:5672/%2f")
///     .unwrap()
///     .queue_depth("orders", Threshold::at_most(1_000.0, 10_000.0, 100_000.0).unwrap());
/// let broker = Dependency::builder("broker", check).kind("amqp").build().unwrap();
/// # let _ = broker;
/// ```
pub struct AmqpCheck {
    uri: lapin::uri::AMQPUri,
    /// As given, for `Debug` (its password masked).
    url: String,
    queue: Option<(String, Threshold)>,
    connection: Mutex<Option<Held>>,
    latency: Option<Threshold>,
    /// A private CA's roots for `amqps://`, and their PEM for lapin; the web's by default.
    roots: Option<(Arc<rustls::RootCertStore>, String)>,
}

/// A connection and the runtime its tasks run on; dropping it drops both (connection first).
struct Held {
    connection: Connection,
    _runtime: Dedicated,
}

/// A one-thread Tokio runtime on a thread of its own, shut down when dropped: every task on
/// it ends, every socket they held is closed.
struct Dedicated {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Dedicated {
    fn start() -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("status-amqp".to_owned())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                // Dropped here: its tasks are cancelled, their sockets closed.
            })?;
        Ok(Self {
            handle,
            stop: Some(stop),
        })
    }
}

impl Drop for Dedicated {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl AmqpCheck {
    /// A check of the broker at `url` (`amqp://user:password@host:5672/vhost`, `amqps://` for
    /// TLS).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `url` is an `amqp://` or `amqps://` URL with a host (the
    /// message masks its password).
    pub fn new(url: &str) -> Result<Self, Error> {
        let invalid = || {
            Error::invalid(format!(
                "not an AMQP URL (amqp://user:password@host:port/vhost): {}",
                status_core::mask_credentials(url)
            ))
        };
        if !(url.starts_with("amqp://") || url.starts_with("amqps://")) {
            return Err(invalid());
        }
        let uri: lapin::uri::AMQPUri = url.parse().map_err(|_| invalid())?;
        Ok(Self {
            uri,
            url: url.to_owned(),
            queue: None,
            connection: Mutex::new(None),
            latency: None,
            roots: None,
        })
    }

    /// Trusts the certificates in `pem` for `amqps://` instead of the web's roots (a broker
    /// with a private CA).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `pem` holds no certificate rustls accepts as a root, or is
    /// not UTF-8.
    pub fn roots_pem(mut self, pem: &[u8]) -> Result<Self, Error> {
        let roots = crate::roots::from_pem(pem)?;
        let text = std::str::from_utf8(pem)
            .map_err(|_| Error::invalid("the roots' PEM is not UTF-8"))?
            .to_owned();
        self.roots = Some((Arc::new(roots), text));
        Ok(self)
    }

    /// Reads the depth (messages ready) of `queue` at every run, graded by `threshold`.
    #[must_use]
    pub fn queue_depth(mut self, queue: impl Into<String>, threshold: Threshold) -> Self {
        self.queue = Some((queue.into(), threshold));
        self
    }

    /// Grades the channel's round trip, in milliseconds (OK whatever it is by default).
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

/// The largest first frame (`Connection.Start`) read from a server: a real one is under
/// 2 KiB.
pub(crate) const MAX_GREETING: u32 = 64 * 1024;

/// The server at `host:port` answers AMQP 0-9-1's protocol header as a broker does, within
/// 5 seconds: its first frame is a method frame on channel 0 of at most [`MAX_GREETING`]
/// bytes, ended by the frame-end octet. Nothing more than that is read. Over TLS when `tls`
/// gives the roots to verify the broker by (its certificate for `host`, as lapin verifies it).
async fn greeting(
    host: &str,
    port: u16,
    tls: Option<Arc<rustls::RootCertStore>>,
) -> Result<(), String> {
    let target = format!("{host}:{port}");
    let read = async {
        let stream = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| format!("cannot connect to {target}: {e}"))?;
        let Some(roots) = tls else {
            return first_frame(stream, &target).await;
        };
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("{target}: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(host.to_owned())
            .map_err(|e| format!("{target}: not a name to verify: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, stream)
            .await
            .map_err(|e| format!("{target}: TLS: {e}"))?;
        first_frame(stream, &target).await
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .map_err(|_| format!("{target}: no first frame within 5 s"))?
}

/// Sends the protocol header on `stream` and reads the broker's first frame, bounded.
async fn first_frame<S>(mut stream: S, target: &str) -> Result<(), String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(b"AMQP\x00\x00\x09\x01")
        .await
        .map_err(|e| format!("{target}: {e}"))?;
    let mut head = [0u8; 7];
    stream
        .read_exact(&mut head)
        .await
        .map_err(|e| format!("{target} sent no frame: {e}"))?;
    let size = u32::from_be_bytes([head[3], head[4], head[5], head[6]]);
    if head[0] != 1 || head[1..3] != [0, 0] {
        return Err(format!(
            "{target} did not answer as an AMQP 0-9-1 broker does"
        ));
    }
    if size > MAX_GREETING {
        return Err(format!(
            "{target} declared a first frame of {size} bytes (at most {} KiB is read): not \
             a broker, or a hostile one",
            MAX_GREETING / 1024
        ));
    }
    let mut rest = vec![0u8; size as usize + 1];
    stream
        .read_exact(&mut rest)
        .await
        .map_err(|e| format!("{target}: its first frame was cut: {e}"))?;
    if rest.last() != Some(&0xCE) {
        return Err(format!(
            "{target}: its first frame does not end as a frame does"
        ));
    }
    Ok(())
}

impl Check for AmqpCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        let mut slot = self.connection.lock().await;
        // Taken out: if this run is cancelled, the connection is dropped with it.
        let held = match slot.take() {
            Some(held) if held.connection.status().connected() => held,
            _ => {
                // lapin believes the frame size a server declares, and a peer that declares
                // 2 GiB leaves its I/O thread behind: read the server's first frame here
                // first, bounded (over TLS for amqps://, verified as lapin verifies it).
                let tls = (self.uri.scheme == lapin::uri::AMQPScheme::AMQPS).then(|| {
                    self.roots.as_ref().map_or_else(
                        || Arc::new(crate::roots::web()),
                        |(roots, _)| Arc::clone(roots),
                    )
                });
                let authority = &self.uri.authority;
                if let Err(why) = greeting(&authority.host, authority.port, tls).await {
                    return CheckOutcome::from_error(std::io::Error::other(why));
                }
                let runtime = match Dedicated::start() {
                    Ok(runtime) => runtime,
                    Err(e) => return CheckOutcome::from_error(e),
                };
                let on = async_rs::Runtime::tokio_with_handle(runtime.handle.clone());
                let tls = lapin::tcp::OwnedTLSConfig {
                    identity: None,
                    cert_chain: self.roots.as_ref().map(|(_, pem)| pem.clone()),
                };
                match Connection::connect_uri_with_config(
                    self.uri.clone(),
                    ConnectionProperties::default(),
                    tls,
                    on,
                )
                .await
                {
                    Ok(connection) => Held {
                        connection,
                        _runtime: runtime,
                    },
                    Err(e) => return CheckOutcome::from_error(e),
                }
            }
        };
        let connection = &held.connection;
        let channel = match connection.create_channel().await {
            Ok(channel) => channel,
            Err(e) => return CheckOutcome::from_error(e),
        };
        let elapsed = started.elapsed();
        let outcome = match &self.queue {
            None => graded(elapsed, self.latency.as_ref(), "channel opened"),
            Some((queue, threshold)) => {
                let declared = channel
                    .queue_declare(
                        queue.as_str().into(),
                        QueueDeclareOptions {
                            passive: true,
                            ..QueueDeclareOptions::default()
                        },
                        FieldTable::default(),
                    )
                    .await;
                match declared {
                    Ok(declared) => {
                        let depth = f64::from(declared.message_count());
                        CheckOutcome::new(
                            threshold.status_of(depth),
                            format!("{depth} messages ready in {queue}"),
                        )
                        .with_value_in(depth, status_core::check::Unit::Count)
                    }
                    // A passive declare of a missing queue closes the channel (404), not the
                    // connection, which is kept.
                    Err(e) => {
                        *slot = Some(held);
                        return CheckOutcome::new(
                            CheckStatus::Major,
                            format!("queue {queue} cannot be read: {e}"),
                        );
                    }
                }
            }
        };
        if channel.close(200, "status check".into()).await.is_err() {
            return outcome;
        }
        *slot = Some(held);
        outcome
    }
}

impl fmt::Debug for AmqpCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AmqpCheck")
            .field("url", &status_core::mask_credentials(&self.url))
            .field("queue", &self.queue)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}
