//! TLS certificates: how much of its lifetime the certificate an endpoint presents (or a file
//! the application serves) has left, graded before it expires.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::RootCertStore;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use self::verify::{verifier, Recording};
use status_core::check::{Check, CheckOutcome};
use status_core::{CheckStatus, Error};

mod file;
mod verify;

/// Grades a TLS certificate by the share of its lifetime left: MINOR below one third (when
/// ACME clients renew), MAJOR below a tenth by default; OUTAGE when it has expired, is not
/// yet valid, or its chain does not verify to a trusted root for its name. The message says
/// when it expires; the outcome's value is that instant, in seconds since the Unix epoch.
///
/// Two sources: [`remote`](Self::remote) connects to `host:port` and reads the certificate
/// the server presents for a name (SNI), sending nothing once the handshake is done;
/// [`file`](Self::file) reads a PEM chain the application serves. Both verify against the
/// web's roots (Mozilla's, `webpki-roots`) unless [`roots_pem`](Self::roots_pem) names others.
///
/// # Example
///
/// ```
/// use status_checks::tls::TlsCheck;
/// use status_core::Dependency;
///
/// let check = TlsCheck::remote("api.example.com:443").unwrap().left(0.25, 0.1).unwrap();
/// let cert = Dependency::builder("api-certificate", check).kind("tls").build().unwrap();
/// # let _ = cert;
/// ```
pub struct TlsCheck {
    source: Source,
    name: ServerName<'static>,
    roots: Arc<RootCertStore>,
    minor: f64,
    major: f64,
}

enum Source {
    Remote { host: String, port: u16 },
    File(PathBuf),
}

impl TlsCheck {
    /// The certificate `host:port` presents for `host`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `address` is `host:port` with a valid DNS name or IP.
    pub fn remote(address: &str) -> Result<Self, Error> {
        let (host, port) = address
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
            .ok_or_else(|| Error::invalid(format!("not host:port: {address:?}")))?;
        Ok(Self {
            name: server_name(host)?,
            source: Source::Remote {
                host: host.to_owned(),
                port,
            },
            roots: Arc::new(crate::roots::web()),
            minor: 1.0 / 3.0,
            major: 0.1,
        })
    }

    /// The PEM chain in `path` (the certificate first, then its intermediates), served for
    /// `name`: read at every run, so a renewed file is seen at once.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a `name` that is neither a DNS name nor an IP.
    pub fn file(path: impl Into<PathBuf>, name: &str) -> Result<Self, Error> {
        Ok(Self {
            name: server_name(name)?,
            source: Source::File(path.into()),
            roots: Arc::new(crate::roots::web()),
            minor: 1.0 / 3.0,
            major: 0.1,
        })
    }

    /// The name the certificate must be valid for, and the SNI sent (the host by default).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a name that is neither a DNS name nor an IP.
    pub fn server_name(mut self, name: &str) -> Result<Self, Error> {
        self.name = server_name(name)?;
        Ok(self)
    }

    /// Trusts the certificates in `pem` instead of the web's roots (a private CA).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `pem` holds no certificate rustls accepts as a root.
    pub fn roots_pem(mut self, pem: &[u8]) -> Result<Self, Error> {
        self.roots = Arc::new(crate::roots::from_pem(pem)?);
        Ok(self)
    }

    /// MINOR once less than `minor` of the lifetime is left, MAJOR below `major` (shares,
    /// 0 to 1; defaults one third and a tenth).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] unless `0 <= major <= minor <= 1`.
    pub fn left(mut self, minor: f64, major: f64) -> Result<Self, Error> {
        if !(0.0..=1.0).contains(&minor) || !(0.0..=minor).contains(&major) {
            return Err(Error::invalid(format!(
                "shares of the lifetime left must be 0 <= major <= minor <= 1: {minor}, {major}"
            )));
        }
        self.minor = minor;
        self.major = major;
        Ok(self)
    }

    /// The chain as presented, and whether it verified.
    async fn chain(&self) -> Result<Presented, CheckOutcome> {
        match &self.source {
            Source::Remote { host, port } => {
                let verifier = Arc::new(Recording::new(&self.roots)?);
                let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .with_safe_default_protocol_versions()
                .map_err(|e| CheckOutcome::new(CheckStatus::Outage, e.to_string()))?
                .dangerous()
                .with_custom_certificate_verifier(verifier.clone())
                .with_no_client_auth();
                let tcp = TcpStream::connect((host.as_str(), *port))
                    .await
                    .map_err(CheckOutcome::from_error)?;
                let handshake = TlsConnector::from(Arc::new(config))
                    .connect(self.name.clone(), tcp)
                    .await;
                // The handshake went on whatever the verdict, so the chain is read even when
                // it is expired; the connection is dropped here, nothing sent on it.
                drop(handshake.map_err(CheckOutcome::from_error)?);
                let presented = verifier.presented.lock().ok().and_then(|mut p| p.take());
                presented.ok_or_else(|| {
                    CheckOutcome::new(CheckStatus::Outage, "the server presented no certificate")
                })
            }
            Source::File(path) => {
                let pem = file::read_pem(path).await?;
                let chain = CertificateDer::pem_slice_iter(&pem)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        CheckOutcome::new(
                            CheckStatus::Outage,
                            format!("{}: invalid PEM: {e}", path.display()),
                        )
                    })?;
                let Some((leaf, intermediates)) = chain.split_first() else {
                    return Err(CheckOutcome::new(
                        CheckStatus::Outage,
                        format!("{}: no certificate", path.display()),
                    ));
                };
                let verifier = verifier(&self.roots)?;
                let verified = verifier
                    .verify_server_cert(leaf, intermediates, &self.name, &[], UnixTime::now())
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                Ok(Presented {
                    leaf: leaf.clone().into_owned(),
                    verified,
                })
            }
        }
    }
}

/// What a handshake (or a file) showed.
struct Presented {
    leaf: CertificateDer<'static>,
    verified: Result<(), String>,
}

impl Check for TlsCheck {
    async fn check(&self) -> CheckOutcome {
        let presented = match self.chain().await {
            Ok(presented) => presented,
            Err(outcome) => return outcome,
        };
        let (not_before, not_after) = match validity(&presented.leaf) {
            Ok(validity) => validity,
            Err(e) => return CheckOutcome::new(CheckStatus::Outage, e),
        };
        grade(
            not_before,
            not_after,
            SystemTime::now(),
            presented.verified,
            (self.minor, self.major),
        )
    }
}

/// The grade of a certificate valid from `not_before` to `not_after`, at `now`.
fn grade(
    not_before: SystemTime,
    not_after: SystemTime,
    now: SystemTime,
    verified: Result<(), String>,
    (minor, major): (f64, f64),
) -> CheckOutcome {
    let expires = DateTime::<Utc>::from(not_after).format("%Y-%m-%dT%H:%M:%SZ");
    let expiry_secs = not_after
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let lifetime = not_after
        .duration_since(not_before)
        .unwrap_or(Duration::ZERO);
    let outcome = |status, message: String| {
        CheckOutcome::new(status, message)
            .with_value_in(expiry_secs, status_core::check::Unit::UnixSeconds)
    };
    if now >= not_after {
        return outcome(
            CheckStatus::Outage,
            format!("the certificate expired at {expires}"),
        );
    }
    if now < not_before {
        let from = DateTime::<Utc>::from(not_before).format("%Y-%m-%dT%H:%M:%SZ");
        return outcome(
            CheckStatus::Outage,
            format!("the certificate is not valid before {from}"),
        );
    }
    if let Err(e) = verified {
        return outcome(
            CheckStatus::Outage,
            format!("the certificate does not verify: {e} (expires {expires})"),
        );
    }
    let left = not_after.duration_since(now).unwrap_or(Duration::ZERO);
    let share = if lifetime.is_zero() {
        0.0
    } else {
        left.as_secs_f64() / lifetime.as_secs_f64()
    };
    let status = if share < major {
        CheckStatus::Major
    } else if share < minor {
        CheckStatus::Minor
    } else {
        CheckStatus::Ok
    };
    outcome(
        status,
        format!(
            "expires {expires}, in {:.1} days ({:.0} % of its {:.0}-day lifetime left)",
            left.as_secs_f64() / 86_400.0,
            share * 100.0,
            lifetime.as_secs_f64() / 86_400.0
        ),
    )
}

/// The certificate's validity period.
fn validity(der: &CertificateDer<'_>) -> Result<(SystemTime, SystemTime), String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref())
        .map_err(|e| format!("the certificate does not parse: {e}"))?;
    let at = |t: i64| u64::try_from(t).map_or(UNIX_EPOCH, |s| UNIX_EPOCH + Duration::from_secs(s));
    let validity = cert.validity();
    Ok((
        at(validity.not_before.timestamp()),
        at(validity.not_after.timestamp()),
    ))
}

fn server_name(name: &str) -> Result<ServerName<'static>, Error> {
    ServerName::try_from(name.to_owned())
        .map_err(|e| Error::invalid(format!("not a DNS name or an IP: {name:?}: {e}")))
}

impl fmt::Debug for TlsCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::Remote { host, port } => format!("{host}:{port}"),
            Source::File(path) => path.display().to_string(),
        };
        f.debug_struct("TlsCheck")
            .field("source", &source)
            .field("name", &self.name)
            .field("minor", &self.minor)
            .field("major", &self.major)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86_400);

    fn at(start: SystemTime, days: u64) -> SystemTime {
        start + DAY * u32::try_from(days).unwrap()
    }

    #[test]
    fn the_grade_follows_the_share_of_the_lifetime_left() {
        let start = UNIX_EPOCH + DAY * 20_000;
        let end = at(start, 90);
        let shares = (1.0 / 3.0, 0.1);
        let grade_at = |day| grade(start, end, at(start, day), Ok(()), shares);
        assert_eq!(grade_at(10).status(), CheckStatus::Ok);
        assert_eq!(grade_at(59).status(), CheckStatus::Ok, "31 of 90 days left");
        assert_eq!(
            grade_at(61).status(),
            CheckStatus::Minor,
            "29 of 90 days left"
        );
        assert_eq!(
            grade_at(82).status(),
            CheckStatus::Major,
            "8 of 90 days left"
        );
        assert_eq!(grade_at(90).status(), CheckStatus::Outage, "expired");
        let outcome = grade_at(61);
        assert!(
            outcome
                .message()
                .contains("in 29.0 days (32 % of its 90-day lifetime left)"),
            "{}",
            outcome.message()
        );
    }

    #[test]
    fn not_yet_valid_or_unverified_is_an_outage_that_still_says_when_it_expires() {
        let start = UNIX_EPOCH + DAY * 20_000;
        let end = at(start, 90);
        let early = grade(start, end, start - DAY, Ok(()), (0.3, 0.1));
        assert_eq!(early.status(), CheckStatus::Outage);
        assert!(
            early.message().contains("not valid before"),
            "{}",
            early.message()
        );
        let unverified = grade(
            start,
            end,
            at(start, 1),
            Err("UnknownIssuer".into()),
            (0.3, 0.1),
        );
        assert_eq!(unverified.status(), CheckStatus::Outage);
        assert!(unverified.message().contains("UnknownIssuer"));
        assert!(
            unverified.message().contains("expires"),
            "{}",
            unverified.message()
        );
    }

    #[test]
    fn thresholds_out_of_order_are_refused() {
        let check = TlsCheck::remote("example.com:443").unwrap();
        assert!(check.left(0.1, 0.3).is_err());
        assert!(TlsCheck::remote("example.com").is_err());
        assert!(TlsCheck::remote("exa mple.com:443").is_err());
    }
}
