//! Certificates made by the test (rcgen), served by a TLS server on loopback and written to
//! files: graded by the lifetime they have left, at the edges the issue names.

use std::sync::Arc;

use chrono::{Datelike, Duration as Days, Utc};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use status_checks::tls::TlsCheck;
use status_core::check::Check;
use status_core::CheckStatus;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A certificate authority of the test's own.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub(crate) fn new() -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        valid(&mut params, -3650, 3650);
        Self {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate for `localhost`, valid from `from` to `to` days from today, and its key.
    pub(crate) fn leaf(&self, from: i64, to: i64) -> (String, KeyPair) {
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        valid(&mut params, from, to);
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key)
    }
}

/// Valid from midnight (UTC) `from` days from today to midnight `to` days from today.
fn valid(params: &mut CertificateParams, from: i64, to: i64) {
    let ymd = |offset| {
        let date = (Utc::now() + Days::days(offset)).date_naive();
        rcgen::date_time_ymd(date.year(), date.month() as u8, date.day() as u8)
    };
    params.not_before = ymd(from);
    params.not_after = ymd(to);
}

/// A TLS acceptor presenting `cert` (a PEM chain) with `key`.
pub(crate) fn acceptor(cert: &str, key: &KeyPair) -> TlsAcceptor {
    let chain = rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    TlsAcceptor::from(Arc::new(config))
}

/// Serves `cert` (a PEM chain) with `key` on loopback: every connection gets a handshake.
async fn serve(cert: &str, key: &KeyPair) -> u16 {
    let acceptor = acceptor(cert, key);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let _ = acceptor.accept(tcp).await;
            });
        }
    });
    port
}

use rustls::pki_types::pem::PemObject;

async fn remote(ca: &Ca, port: u16) -> status_core::check::CheckOutcome {
    TlsCheck::remote(&format!("127.0.0.1:{port}"))
        .unwrap()
        .server_name("localhost")
        .unwrap()
        .roots_pem(ca.pem().as_bytes())
        .unwrap()
        .check()
        .await
}

#[tokio::test]
async fn an_endpoints_certificate_is_graded_by_the_lifetime_it_has_left() {
    let ca = Ca::new();
    // 90-day certificates, at 60, 20 and 5 days left: OK, MINOR (< 1/3), MAJOR (< 1/10).
    for (from, to, expected) in [
        (-30, 60, CheckStatus::Ok),
        (-70, 20, CheckStatus::Minor),
        (-85, 5, CheckStatus::Major),
    ] {
        let (cert, key) = ca.leaf(from, to);
        let port = serve(&cert, &key).await;
        let outcome = remote(&ca, port).await;
        assert_eq!(outcome.status(), expected, "{}", outcome.message());
        assert!(
            outcome.message().contains("lifetime left"),
            "{}",
            outcome.message()
        );
        let expiry = outcome.value().expect("the expiry as the value");
        let days_left = (expiry - Utc::now().timestamp() as f64) / 86_400.0;
        assert!(
            (days_left - to as f64).abs() < 1.01,
            "{days_left} days left, {to} made"
        );
    }
}

#[tokio::test]
async fn expired_not_yet_valid_or_untrusted_is_an_outage() {
    let ca = Ca::new();
    let (expired, key) = ca.leaf(-90, -1);
    let outcome = remote(&ca, serve(&expired, &key).await).await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(
        outcome.message().contains("expired at"),
        "{}",
        outcome.message()
    );

    let (early, key) = ca.leaf(2, 92);
    let outcome = remote(&ca, serve(&early, &key).await).await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(
        outcome.message().contains("not valid before"),
        "{}",
        outcome.message()
    );

    // Valid dates, but signed by a CA the check does not trust.
    let stranger = Ca::new();
    let (cert, key) = stranger.leaf(-1, 89);
    let outcome = remote(&ca, serve(&cert, &key).await).await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(
        outcome.message().contains("does not verify"),
        "{}",
        outcome.message()
    );

    // The right CA, the wrong name.
    let (cert, key) = ca.leaf(-1, 89);
    let port = serve(&cert, &key).await;
    let outcome = TlsCheck::remote(&format!("127.0.0.1:{port}"))
        .unwrap()
        .server_name("example.com")
        .unwrap()
        .roots_pem(ca.pem().as_bytes())
        .unwrap()
        .check()
        .await;
    assert_eq!(outcome.status(), CheckStatus::Outage);
    assert!(
        outcome.message().contains("does not verify"),
        "{}",
        outcome.message()
    );
}

#[tokio::test]
async fn a_served_file_is_read_at_every_run_so_a_renewal_shows_at_once() {
    let ca = Ca::new();
    let dir = std::env::temp_dir().join(format!("status-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("server.pem");
    let (old, _) = ca.leaf(-85, 5);
    std::fs::write(&path, &old).unwrap();
    let check = TlsCheck::file(&path, "localhost")
        .unwrap()
        .roots_pem(ca.pem().as_bytes())
        .unwrap();
    assert_eq!(check.check().await.status(), CheckStatus::Major);
    let (renewed, _) = ca.leaf(-1, 89);
    std::fs::write(&path, &renewed).unwrap();
    let outcome = check.check().await;
    assert_eq!(outcome.status(), CheckStatus::Ok, "{}", outcome.message());
    std::fs::write(&path, "not a certificate").unwrap();
    assert_eq!(check.check().await.status(), CheckStatus::Outage);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A path that is not a regular file is never read: a FIFO (whose open would block for
/// ever), a device that never ends (`/dev/zero`), a directory; nor a file past 1 MiB. Each
/// answers at once, and no thread is left behind.
#[tokio::test]
async fn only_a_regular_file_of_reasonable_size_is_read() {
    let dir = std::env::temp_dir().join(format!("status-tls-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let huge = dir.join("huge.pem");
    std::fs::write(&huge, vec![b'A'; 2 * 1024 * 1024]).unwrap();
    let threads = || std::fs::read_dir("/proc/self/task").unwrap().count();
    let before = threads();
    for (path, says) in [
        (fifo.as_path(), "not a regular file"),
        (std::path::Path::new("/dev/zero"), "not a regular file"),
        (dir.as_path(), "not a regular file"),
        (huge.as_path(), "larger than 1024 KiB"),
    ] {
        for _ in 0..5 {
            let check = TlsCheck::file(path, "localhost").unwrap();
            let outcome = tokio::time::timeout(std::time::Duration::from_secs(2), check.check())
                .await
                .unwrap_or_else(|_| panic!("{}: the check hangs", path.display()));
            assert_eq!(
                outcome.status(),
                CheckStatus::Outage,
                "{}",
                outcome.message()
            );
            assert!(outcome.message().contains(says), "{}", outcome.message());
        }
    }
    // Every reading thread has ended.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while threads() > before && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        threads() <= before,
        "{} threads, {before} before",
        threads()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
