//! How mail leaves: one SMTP exchange a message, whose reads are bounded. A mail server that
//! sends a greeting without end (no newline) would otherwise grow a buffer until the
//! deadline: here a whole exchange reads at most [`MAX_READ`] and fails past it, with TLS
//! from the start (`smtps://`, the bytes under TLS counted) or after STARTTLS (`smtp://`).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use lettre::message::Message;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The most one exchange reads from a mail server: a greeting, a few EHLO lines and an
/// answer to each command take a few KiB.
pub(super) const MAX_READ: usize = 64 * 1024;

/// How long connecting may take.
const CONNECT: Duration = Duration::from_secs(10);

/// A mail server, as an SMTP URL names it.
#[derive(Clone)]
pub(super) struct Mailer {
    host: String,
    port: u16,
    tls: TlsParameters,
    /// TLS from the start (`smtps://`), with these roots; else STARTTLS where the server
    /// offers it (`tls`).
    implicit: Option<Arc<rustls::RootCertStore>>,
    credentials: Option<Credentials>,
}

impl Mailer {
    /// The mail server of `url`: `smtp://[user:password@]host[:port]` (port 587) with
    /// STARTTLS where offered, `smtps://…` (port 465) with TLS from the start.
    pub(super) fn new(url: &str) -> Result<Self, String> {
        let (scheme, rest) = url.split_once("://").ok_or("the SMTP URL has no scheme")?;
        let (credentials, hostport) = match rest.trim_end_matches('/').rsplit_once('@') {
            Some((user, hostport)) => {
                let (name, password) = user.split_once(':').unwrap_or((user, ""));
                (
                    Some(Credentials::new(name.to_owned(), password.to_owned())),
                    hostport,
                )
            }
            None => (None, rest.trim_end_matches('/')),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| "the SMTP port is not a number")?,
            ),
            None => (hostport, if scheme == "smtps" { 465 } else { 587 }),
        };
        let tls = TlsParameters::new(host.to_owned()).map_err(|e| e.to_string())?;
        let implicit = match scheme {
            "smtp" => None,
            "smtps" => Some(Arc::new(rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })),
            other => {
                return Err(format!(
                    "the SMTP URL's scheme is {other:?}, not smtp or smtps"
                ))
            }
        };
        Ok(Self {
            host: host.to_owned(),
            port,
            tls,
            implicit,
            credentials,
        })
    }

    /// Sends `message` in one exchange: connect, TLS (`smtps://`), greeting, EHLO,
    /// STARTTLS where offered (`smtp://`), AUTH when credentials are given, the message,
    /// QUIT.
    pub(super) async fn send(&self, message: Message) -> Result<(), String> {
        let socket =
            tokio::time::timeout(CONNECT, TcpStream::connect((self.host.as_str(), self.port)))
                .await
                .map_err(|_| format!("no connection within {}s", CONNECT.as_secs()))?
                .map_err(|e| e.to_string())?;
        let _ = socket.set_nodelay(true);
        let hello = ClientId::default();
        let capped = Capped {
            inner: socket,
            left: MAX_READ,
        };
        let stream: Box<dyn AsyncTokioStream> = match &self.implicit {
            // TLS over the capped socket, then the exchange over TLS.
            Some(roots) => Box::new(TlsCapped(tls(&self.host, roots, capped).await?)),
            None => Box::new(capped),
        };
        let mut conn = AsyncSmtpConnection::connect_with_transport(stream, &hello)
            .await
            .map_err(|e| e.to_string())?;
        if self.implicit.is_none() && conn.can_starttls() {
            conn.starttls(self.tls.clone(), &hello)
                .await
                .map_err(|e| e.to_string())?;
        }
        if let Some(credentials) = &self.credentials {
            conn.auth(&[Mechanism::Plain, Mechanism::Login], credentials)
                .await
                .map_err(|e| e.to_string())?;
        }
        let sent = conn
            .send(message.envelope(), &message.formatted())
            .await
            .map_err(|e| e.to_string());
        let _ = conn.quit().await;
        sent.map(|_| ())
    }
}

/// TLS from the start over `socket`, verified against `roots` for `host` (rustls, ring).
async fn tls(
    host: &str,
    roots: &Arc<rustls::RootCertStore>,
    socket: Capped,
) -> Result<tokio_rustls::client::TlsStream<Capped>, String> {
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(Arc::clone(roots))
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| format!("not a name to verify: {e}"))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, socket)
        .await
        .map_err(|e| format!("TLS: {e}"))
}

/// The exchange's TLS over the capped socket.
#[derive(Debug)]
struct TlsCapped(tokio_rustls::client::TlsStream<Capped>);

impl AsyncTokioStream for TlsCapped {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.0.get_ref().0.inner.peer_addr()
    }
}

impl AsyncRead for TlsCapped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsCapped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// A socket that reads at most `left` bytes more, then fails.
#[derive(Debug)]
struct Capped {
    inner: TcpStream,
    left: usize,
}

impl AsyncTokioStream for Capped {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.peer_addr()
    }
}

impl AsyncRead for Capped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.left == 0 {
            return Poll::Ready(Err(io::Error::other(format!(
                "the mail server sent more than {} KiB in one exchange",
                MAX_READ / 1024
            ))));
        }
        let room = buf.remaining().min(self.left);
        let mut limited = ReadBuf::new(buf.initialize_unfilled_to(room));
        let polled = Pin::new(&mut self.inner).poll_read(cx, &mut limited);
        let read = limited.filled().len();
        if let Poll::Ready(Ok(())) = polled {
            buf.advance(read);
            self.left -= read;
        }
        polled
    }
}

impl AsyncWrite for Capped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::{Mailer, MAX_READ};

    fn message() -> lettre::Message {
        lettre::Message::builder()
            .from("status@shop.example".parse().unwrap())
            .to("ana@example.com".parse().unwrap())
            .subject("x")
            .body(String::from("x"))
            .unwrap()
    }

    /// `mailer`'s send fails at once, past 64 KiB read, long before the server (which counts
    /// what it `sent`) has written all it would.
    async fn gives_up_at_once(mailer: &Mailer, sent: tokio::task::JoinHandle<usize>) {
        let e = tokio::time::timeout(std::time::Duration::from_secs(10), mailer.send(message()))
            .await
            .expect("it gave up at once")
            .unwrap_err();
        assert!(e.contains("more than 64 KiB"), "{e}");
        let sent = sent.await.unwrap();
        assert!(
            sent < 64 * MAX_READ,
            "the server was read to its end: {sent}"
        );
    }

    #[tokio::test]
    async fn a_greeting_without_end_fails_once_64_kib_are_read() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let chunk = vec![b'2'; 16 * 1024];
            let mut sent = 0;
            // A greeting line that never ends: stops when the client hangs up.
            while socket.write_all(&chunk).await.is_ok() {
                sent += chunk.len();
                if sent > 64 * MAX_READ {
                    break;
                }
            }
            sent
        });
        let mailer = Mailer::new(&format!("smtp://127.0.0.1:{port}")).unwrap();
        gives_up_at_once(&mailer, sent).await;
    }

    #[tokio::test]
    async fn a_greeting_without_end_under_tls_from_the_start_fails_too() {
        use std::sync::Arc;

        use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
        use tokio::io::AsyncReadExt;

        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.unwrap();
            let mut tls = acceptor.accept(socket).await.unwrap();
            let chunk = vec![b'2'; 16 * 1024];
            let mut sent = 0;
            while tls.write_all(&chunk).await.is_ok() && tls.flush().await.is_ok() {
                sent += chunk.len();
                if sent > 64 * MAX_READ {
                    break;
                }
            }
            let _ = tls.read(&mut [0u8; 16]).await;
            sent
        });
        let mut mailer = Mailer::new(&format!("smtps://localhost:{port}")).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(made.cert.der().clone()).unwrap();
        mailer.implicit = Some(Arc::new(roots));
        gives_up_at_once(&mailer, sent).await;
    }

    #[test]
    fn mistyped_urls_are_refused() {
        for url in [
            "mail.example.com",
            "smtpx://mail.example.com",
            "smtp://mail.example.com:port",
        ] {
            assert!(Mailer::new(url).is_err(), "{url}");
        }
        let smtps = Mailer::new("smtps://u:p@mail.example.com").unwrap();
        assert!(smtps.implicit.is_some() && smtps.port == 465 && smtps.credentials.is_some());
        let smtp = Mailer::new("smtp://mail.example.com").unwrap();
        assert!(smtp.implicit.is_none() && smtp.port == 587 && smtp.credentials.is_none());
    }
}
