//! How mail leaves: one SMTP exchange a message, whose reads are bounded. A mail server that
//! sends a greeting without end (no newline) would otherwise grow a buffer until the
//! deadline: here a whole exchange reads at most [`MAX_READ`] and fails past it.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use lettre::message::Message;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The most one exchange reads from a mail server: a greeting, a few EHLO lines and an
/// answer to each command take a few KiB.
pub(super) const MAX_READ: usize = 64 * 1024;

/// How long connecting may take.
const CONNECT: Duration = Duration::from_secs(10);

/// A mail server, as an SMTP URL names it.
#[derive(Clone)]
pub(super) enum Mailer {
    /// `smtp://`: STARTTLS where the server offers it, over a socket whose reads are capped.
    Starttls {
        host: String,
        port: u16,
        tls: TlsParameters,
        credentials: Option<Credentials>,
    },
    /// `smtps://`: TLS from the start, through lettre's own transport. Its reads are bounded
    /// by the sending's deadline only, after a handshake that needs a valid certificate for
    /// the host.
    Implicit(AsyncSmtpTransport<Tokio1Executor>),
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
        match scheme {
            "smtp" => Ok(Self::Starttls {
                host: host.to_owned(),
                port,
                tls,
                credentials,
            }),
            "smtps" => {
                let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
                    .port(port)
                    .tls(Tls::Wrapper(tls))
                    .timeout(Some(CONNECT));
                if let Some(c) = credentials {
                    builder = builder.credentials(c);
                }
                Ok(Self::Implicit(builder.build()))
            }
            other => Err(format!(
                "the SMTP URL's scheme is {other:?}, not smtp or smtps"
            )),
        }
    }

    /// Sends `message` in one exchange: connect, greeting, EHLO, STARTTLS where offered,
    /// AUTH when credentials are given, the message, QUIT.
    pub(super) async fn send(&self, message: Message) -> Result<(), String> {
        let (host, port, tls, credentials) = match self {
            Self::Implicit(transport) => {
                return transport
                    .send(message)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string());
            }
            Self::Starttls {
                host,
                port,
                tls,
                credentials,
            } => (host, *port, tls, credentials),
        };
        let socket = tokio::time::timeout(CONNECT, TcpStream::connect((host.as_str(), port)))
            .await
            .map_err(|_| format!("no connection within {}s", CONNECT.as_secs()))?
            .map_err(|e| e.to_string())?;
        let _ = socket.set_nodelay(true);
        let hello = ClientId::default();
        let capped = Box::new(Capped {
            inner: socket,
            left: MAX_READ,
        });
        let mut conn = AsyncSmtpConnection::connect_with_transport(capped, &hello)
            .await
            .map_err(|e| e.to_string())?;
        if conn.can_starttls() {
            conn.starttls(tls.clone(), &hello)
                .await
                .map_err(|e| e.to_string())?;
        }
        if let Some(credentials) = credentials {
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

    #[test]
    fn mistyped_urls_are_refused() {
        for url in [
            "mail.example.com",
            "smtpx://mail.example.com",
            "smtp://mail.example.com:port",
        ] {
            assert!(Mailer::new(url).is_err(), "{url}");
        }
        assert!(matches!(
            Mailer::new("smtps://u:p@mail.example.com").unwrap(),
            Mailer::Implicit(_)
        ));
        assert!(matches!(
            Mailer::new("smtp://mail.example.com").unwrap(),
            Mailer::Starttls { port: 587, .. }
        ));
    }
}
