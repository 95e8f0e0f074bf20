//! Dependency health over gRPC: `grpc.health.v1.Health`, to the letter of the protocol, for
//! Kubernetes `grpc:` probes, Envoy and gRPC's client-side health checking.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use status_core::Registry;
//! use tonic::service::Routes;
//!
//! let registry = Registry::new();
//! let health = status_grpc::HealthService::new(&registry);
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:50051").await?;
//! // Bounded in connections, streams, idle time and log volume; see `serve`.
//! status_grpc::serve(listener, Routes::new(health.into_server())).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Serve it with [`serve()`] rather than tonic's default builder, which bounds nothing: a
//! client that opens connections and sends only a preface can exhaust the process's file
//! descriptors, and the HTTP probes with them.
//!
//! | feature | what |
//! |---|---|
//! | `metrics` | [`metrics`]: watches and connections for a Prometheus registry |
//!
//! # Services
//!
//! | service | SERVING while |
//! |---|---|
//! | `""` | the instance is fit for traffic: not OUTAGE, no rotation hold ([`Probes::verdict`](status_core::Probes::verdict), what makes `/healthcheck/summary` answer 200) |
//! | `probe/live` | `/healthcheck/live` answers 200: the instance did not cull itself |
//! | `probe/ready` | `/healthcheck/ready` answers 200: by the [`Probes`] given ([`HealthService::probes`]: a bound group, the fleet's excuse) |
//! | `probe/startup` | `/healthcheck/startup` answers 200: every dependency checked once |
//! | a probe group's name | the group passes by its rule ([`Registry::group_readiness`](status_core::Registry::group_readiness)) |
//! | `feature/{name}` | the feature is enabled |
//!
//! Every service renders the core's one verdict that its HTTP route renders, so the two agree
//! through a shutdown too: once it begins (a [`HoldSource::Shutdown`](status_core::HoldSource)
//! hold, as `status_http::shutdown::graceful` takes), `""`, `probe/ready` and the groups that
//! count holds are NOT_SERVING, as their routes answer 503; `probe/live`, `probe/startup`,
//! groups that ignore holds and features answer as their routes do. Watch streams see it,
//! then end when the [grace](HealthService::shutdown_grace) is over.
//!
//! For Kubernetes, point each probe at its service:
//!
//! ```yaml
//! livenessProbe:  { grpc: { port: 50051, service: probe/live } }
//! readinessProbe: { grpc: { port: 50051, service: probe/ready } }
//! startupProbe:   { grpc: { port: 50051, service: probe/startup } }
//! ```
//!
//! # The protocol, as written
//!
//! - `Check`: the status now; a service the server does not know is `NOT_FOUND`.
//! - `Watch`: the status at once, then each change. A slow reader gets the latest status,
//!   never a backlog. A service the server does not know is one `SERVICE_UNKNOWN` message
//!   with the stream kept open; the real status follows if the service appears.
//! - `List` (gRFC A90): every service with its status.
//! - A service name over 256 bytes, or not UTF-8: `INVALID_ARGUMENT`. Watch streams beyond
//!   [`max_watches`](HealthService::max_watches) (10,000 by default), beyond
//!   [50 on one connection](HealthService::max_watches_per_connection) or
//!   [1,000 from one address](HealthService::max_watches_per_peer): `RESOURCE_EXHAUSTED`,
//!   counted ([`refused_watches_by_cap`](HealthService::refused_watches_by_cap)). Nothing a
//!   client sends changes any state.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod check;
mod codec;
#[cfg(feature = "metrics")]
mod metrics;
pub mod serve;
mod services;
mod sync;
mod watch;

#[cfg(feature = "metrics")]
pub use self::metrics::metrics;
pub use self::serve::{serve, ServerStats};
/// The tonic this crate is built with (0.14): use it for your own services, so that they
/// and the health service share one version.
pub use tonic;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use status_core::{Probes, Registry};
use tonic::{Request, Response, Status};

pub use self::pb::health_check_response::ServingStatus;
pub use self::services::{FEATURE_PREFIX, PROBE_LIVE, PROBE_READY, PROBE_STARTUP};
use self::watch::{Caps, Refusal, Watches};

/// The protocol's messages, service and client, generated from its `.proto`
/// (`proto/grpc/health/v1/health.proto`) by `scripts/grpc-codegen` and checked in, as
/// tonic-health does: no build script, no protoc.
#[allow(missing_docs, unreachable_pub, clippy::pedantic, clippy::all)]
#[rustfmt::skip]
pub mod pb;

use self::pb::{HealthCheckRequest, HealthCheckResponse, HealthListRequest, HealthListResponse};

/// The longest service name accepted, in bytes.
pub const MAX_SERVICE_NAME: usize = 256;

/// The most watch streams open at once, by default.
pub const DEFAULT_MAX_WATCHES: usize = 10_000;

/// The most watch streams open at once on one connection, by default: half of what
/// [`serve()`] lets a connection open, so that a connection full of watches can still `Check`.
pub const DEFAULT_MAX_WATCHES_PER_CONNECTION: usize = 50;

/// The most watch streams open at once from one peer address, by default.
pub const DEFAULT_MAX_WATCHES_PER_PEER: usize = 1_000;

/// `grpc.health.v1.Health` for a registry; see the [crate docs](crate).
#[derive(Clone)]
pub struct HealthService {
    probes: Probes,
    watches: Arc<Watches>,
}

impl std::fmt::Debug for HealthService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthService")
            .field("watches", &self.watches())
            .finish_non_exhaustive()
    }
}

impl HealthService {
    /// The health service of `registry`: at most [`DEFAULT_MAX_WATCHES`] watch streams, a
    /// shutdown grace of 5 s.
    #[must_use]
    pub fn new(registry: &Registry) -> Self {
        let caps = Caps {
            total: DEFAULT_MAX_WATCHES,
            connection: DEFAULT_MAX_WATCHES_PER_CONNECTION,
            peer: DEFAULT_MAX_WATCHES_PER_PEER,
        };
        Self {
            probes: Probes::new(registry),
            watches: Arc::new(Watches::new(caps, Duration::from_secs(5))),
        }
    }

    /// Answers `probe/live`, `probe/ready` and `probe/startup` by `probes` (the core's one
    /// composition: a bound readiness group, the fleet's excuse): give the HTTP routes the
    /// same (`status_http::Routes::probes`) and the two can never disagree. By default, the
    /// registry's own readiness.
    #[must_use]
    pub fn probes(mut self, probes: Probes) -> Self {
        self.probes = probes;
        self
    }

    fn with_caps(mut self, caps: Caps) -> Self {
        self.watches = Arc::new(Watches::new(caps, self.watches.grace));
        self
    }

    /// The most watch streams open at once; more are refused with `RESOURCE_EXHAUSTED`.
    #[must_use]
    pub fn max_watches(self, max: usize) -> Self {
        let caps = Caps {
            total: max,
            ..self.watches.caps
        };
        self.with_caps(caps)
    }

    /// The most watch streams open at once on one connection (default
    /// [`DEFAULT_MAX_WATCHES_PER_CONNECTION`]); more are refused with `RESOURCE_EXHAUSTED`.
    /// Counted where the server tells the peer's address ([`serve()`] and tonic's own server
    /// do).
    #[must_use]
    pub fn max_watches_per_connection(self, max: usize) -> Self {
        let caps = Caps {
            connection: max,
            ..self.watches.caps
        };
        self.with_caps(caps)
    }

    /// The most watch streams open at once from one peer address (default
    /// [`DEFAULT_MAX_WATCHES_PER_PEER`]), so that one client cannot take every slot; more
    /// are refused with `RESOURCE_EXHAUSTED`. Behind a proxy that funnels many clients
    /// through one address, raise it.
    #[must_use]
    pub fn max_watches_per_peer(self, max: usize) -> Self {
        let caps = Caps {
            peer: max,
            ..self.watches.caps
        };
        self.with_caps(caps)
    }

    /// How long watch streams stay open once a shutdown has begun (`""` and readiness then
    /// NOT_SERVING), so that clients see it before the streams end: the delay given to
    /// `status_http::shutdown::graceful`, typically.
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.watches = Arc::new(Watches::new(self.watches.caps, grace));
        self
    }

    /// Watch streams open now.
    #[must_use]
    pub fn watches(&self) -> usize {
        self.watches.open.load(Ordering::Acquire)
    }

    /// Watch streams refused since start, whatever the cap.
    #[must_use]
    pub fn refused_watches(&self) -> u64 {
        Refusal::ALL
            .iter()
            .map(|&why| self.watches.refused(why))
            .sum()
    }

    /// Watch streams refused since start, by the cap that refused them: `server`,
    /// `connection`, `peer`.
    #[must_use]
    pub fn refused_watches_by_cap(&self) -> [(&'static str, u64); 3] {
        Refusal::ALL.map(|why| (why.name(), self.watches.refused(why)))
    }

    /// The status of `service` now; `None` for a service this server does not know.
    #[must_use]
    pub fn status(&self, service: &str) -> Option<ServingStatus> {
        services::status(&self.probes, service)
    }

    /// The tonic service, to add to a server.
    #[must_use]
    pub fn into_server(self) -> pb::health_server::HealthServer<Self> {
        pb::health_server::HealthServer::new(self)
    }
}

/// The service name a request asks about: UTF-8, at most [`MAX_SERVICE_NAME`] bytes.
#[allow(clippy::result_large_err)]
fn service_name(request: HealthCheckRequest) -> Result<String, Status> {
    if request.service.len() > MAX_SERVICE_NAME {
        return Err(Status::invalid_argument(format!(
            "a service name is at most {MAX_SERVICE_NAME} bytes"
        )));
    }
    String::from_utf8(request.service)
        .map_err(|_| Status::invalid_argument("a service name is UTF-8"))
}

fn response(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status.into(),
    }
}

/// A watch stream's messages.
type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl pb::health_server::Health for HealthService {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let service = service_name(request.into_inner())?;
        match services::status(&self.probes, &service) {
            Some(status) => Ok(Response::new(response(status))),
            None => Err(Status::not_found(format!("unknown service {service:?}"))),
        }
    }

    async fn list(
        &self,
        _: Request<HealthListRequest>,
    ) -> Result<Response<HealthListResponse>, Status> {
        let statuses: HashMap<String, HealthCheckResponse> = services::all(&self.probes)
            .into_iter()
            .map(|(name, status)| (name, response(status)))
            .collect();
        Ok(Response::new(HealthListResponse { statuses }))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let remote = request.remote_addr();
        let service = service_name(request.into_inner())?;
        let slot = match self.watches.enter(remote) {
            Ok(slot) => slot,
            Err(why) => {
                // Counted in the metrics; said at debug only, so a flood writes no log.
                tracing::debug!(?remote, cap = why.name(), "gRPC health: a watch refused");
                let caps = self.watches.caps;
                let (max, on) = match why {
                    Refusal::Server => (caps.total, "the server"),
                    Refusal::Connection => (caps.connection, "one connection"),
                    Refusal::Peer => (caps.peer, "one peer address"),
                };
                return Err(Status::resource_exhausted(format!(
                    "at most {max} watch streams are open at once on {on}"
                )));
            }
        };
        let (statuses, closing) = self.watches.subscribe(&self.probes, &service);
        // The status now, then each different one; the end when the shutdown's grace is over.
        let stream =
            futures::stream::unfold(Some((statuses, closing, slot, None)), |state| async move {
                let (mut statuses, mut closing, slot, sent) = state?;
                loop {
                    if sent.is_some() {
                        tokio::select! {
                            changed = statuses.changed() => changed.ok()?,
                            _ = closing.wait_for(|closed| *closed) => return None,
                        }
                    }
                    let status = *statuses.borrow_and_update();
                    if sent != Some(status) {
                        let next = Some((statuses, closing, slot, Some(status)));
                        return Some((Ok(response(status)), next));
                    }
                }
            });
        Ok(Response::new(Box::pin(stream)))
    }
}
