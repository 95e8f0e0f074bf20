//! A check of a downstream service through its gRPC health service
//! (`grpc.health.v1.Health/Check`).

use std::fmt;
use std::time::Duration;

use status_core::check::{Check, CheckOutcome, Threshold};
use status_core::{CheckStatus, Error};
use tokio::time::Instant;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;

use crate::pb::health_client::HealthClient;
use crate::pb::HealthCheckRequest;
use crate::ServingStatus;

/// Asks a downstream's gRPC health service about one of its services: SERVING is OK (graded
/// by latency when asked), NOT_SERVING is OUTAGE, UNKNOWN and an unknown service
/// (SERVICE_UNKNOWN, or the protocol's NOT_FOUND) are MAJOR, as is a server without the health
/// service (UNIMPLEMENTED); unreachable, or any other failure, is OUTAGE.
///
/// One connection, made at the first check and reused (HTTP/2 carries each check as a
/// stream of it); connecting gives up after the connect timeout (2 s by default), and a check
/// the engine's timeout cuts off cancels its call.
///
/// # Example
///
/// ```
/// use status_grpc::check::GrpcHealthCheck;
///
/// let payments = GrpcHealthCheck::new("http://payments.internal:50051", "payments.v1.Payments")?;
/// # let _ = payments;
/// # Ok::<(), status_core::Error>(())
/// ```
#[derive(Clone)]
pub struct GrpcHealthCheck {
    uri: String,
    service: String,
    endpoint: Endpoint,
    /// Made at the first check, in the runtime that runs it.
    channel: std::sync::OnceLock<Channel>,
    latency: Option<Threshold>,
}

impl fmt::Debug for GrpcHealthCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcHealthCheck")
            .field("uri", &self.uri)
            .field("service", &self.service)
            .field("latency", &self.latency)
            .finish_non_exhaustive()
    }
}

impl GrpcHealthCheck {
    /// A check of `service` (`""`: the server as a whole) at `uri` (`http://host:port`).
    /// Nothing is connected until the first check.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URI that is not one.
    pub fn new(uri: &str, service: impl Into<String>) -> Result<Self, Error> {
        Self::with_connect_timeout(uri, service, Duration::from_secs(2))
    }

    /// As [`new`](Self::new), giving up a connection attempt after `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URI that is not one.
    pub fn with_connect_timeout(
        uri: &str,
        service: impl Into<String>,
        timeout: Duration,
    ) -> Result<Self, Error> {
        let endpoint = Endpoint::from_shared(uri.to_owned())
            .map_err(|e| Error::invalid(format!("invalid gRPC URI {uri:?}: {e}")))?
            .connect_timeout(timeout);
        Ok(Self {
            uri: uri.to_owned(),
            service: service.into(),
            endpoint,
            channel: std::sync::OnceLock::new(),
            latency: None,
        })
    }

    /// Grades a SERVING answer's round trip, in milliseconds.
    #[must_use]
    pub fn latency(mut self, threshold: Threshold) -> Self {
        self.latency = Some(threshold);
        self
    }

    fn named(&self) -> String {
        if self.service.is_empty() {
            format!("{} (the server)", self.uri)
        } else {
            format!("{} at {}", self.service, self.uri)
        }
    }
}

impl Check for GrpcHealthCheck {
    async fn check(&self) -> CheckOutcome {
        let channel = self.channel.get_or_init(|| self.endpoint.connect_lazy());
        let mut client = HealthClient::new(channel.clone());
        let request = HealthCheckRequest {
            service: self.service.clone().into_bytes(),
        };
        let started = Instant::now();
        let named = self.named();
        match client.check(request).await {
            Ok(answer) => match ServingStatus::try_from(answer.into_inner().status) {
                Ok(ServingStatus::Serving) => {
                    let ms = started.elapsed().as_secs_f64() * 1000.0;
                    let status = self
                        .latency
                        .as_ref()
                        .map_or(CheckStatus::Ok, |t| t.status_of(ms));
                    CheckOutcome::new(status, format!("{named} is SERVING, in {ms:.1} ms"))
                        .with_value_in(ms, status_core::check::Unit::Milliseconds)
                }
                Ok(ServingStatus::NotServing) => {
                    CheckOutcome::new(CheckStatus::Outage, format!("{named} is NOT_SERVING"))
                }
                Ok(other) => CheckOutcome::new(
                    CheckStatus::Major,
                    format!("{named} is {}", other.as_str_name()),
                ),
                Err(_) => CheckOutcome::new(
                    CheckStatus::Major,
                    format!("{named} answered a status the protocol does not have"),
                ),
            },
            Err(status) => {
                let level = match status.code() {
                    Code::NotFound | Code::Unimplemented => CheckStatus::Major,
                    _ => CheckStatus::Outage,
                };
                let said = match status.message() {
                    "" => String::new(),
                    message => format!(": {message}"),
                };
                CheckOutcome::new(level, format!("{named}: {:?}{said}", status.code()))
            }
        }
    }
}
