//! TCP connect and DNS resolution.

use std::fmt;

use tokio::time::Instant;

use crate::latency::graded;
use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::CheckStatus;

/// Opens (and closes) a TCP connection to `host:port`.
///
/// # Example
///
/// ```
/// use status_checks::net::TcpCheck;
///
/// let smtp = TcpCheck::new("mail.example.com:25");
/// # let _ = smtp;
/// ```
#[derive(Debug, Clone)]
pub struct TcpCheck {
    address: String,
    latency: Option<Threshold>,
}

impl TcpCheck {
    /// A check of `address` (`host:port`).
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            latency: None,
        }
    }

    /// Grades the connection time, in milliseconds.
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

impl Check for TcpCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        match tokio::net::TcpStream::connect(&self.address).await {
            Ok(stream) => {
                drop(stream);
                graded(
                    started.elapsed(),
                    self.latency.as_ref(),
                    &format!("connected to {}", self.address),
                )
            }
            Err(e) => CheckOutcome::from_error(e),
        }
    }
}

/// Resolves a host name; OUTAGE when it does not resolve to any address.
///
/// Resolution goes through the system resolver on Tokio's blocking pool: it cannot be
/// cancelled, but the engine still reports OUTAGE on time.
///
/// # Example
///
/// ```
/// use status_checks::net::DnsCheck;
///
/// let dns = DnsCheck::new("payments.example.com");
/// # let _ = dns;
/// ```
#[derive(Clone)]
pub struct DnsCheck {
    host: String,
    latency: Option<Threshold>,
}

impl DnsCheck {
    /// A check resolving `host`.
    pub fn new(host: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            latency: None,
        }
    }

    /// Grades the resolution time, in milliseconds.
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }
}

impl Check for DnsCheck {
    async fn check(&self) -> CheckOutcome {
        let started = Instant::now();
        match tokio::net::lookup_host((self.host.as_str(), 0)).await {
            Ok(addresses) => {
                let count = addresses.count();
                if count == 0 {
                    return CheckOutcome::new(
                        CheckStatus::Outage,
                        format!("{} resolved to no address", self.host),
                    );
                }
                graded(
                    started.elapsed(),
                    self.latency.as_ref(),
                    &format!("{} resolved to {count} addresses", self.host),
                )
            }
            Err(e) => CheckOutcome::from_error(e),
        }
    }
}

impl fmt::Debug for DnsCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DnsCheck")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}
