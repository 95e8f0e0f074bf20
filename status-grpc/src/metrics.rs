//! The health service's and the bounded server's counts for a Prometheus registry (feature
//! `metrics`), read when scraped.

use std::fmt;
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::{HealthService, ServerStats};

/// Registers, for `health` and (when given) the [`serve()`](crate::serve())r's `stats`:
///
/// | metric | what |
/// |---|---|
/// | `status_grpc_watches` | watch streams open |
/// | `status_grpc_watches_refused_total{cap}` | watch streams refused, by the cap that refused them (`server`, `connection`, `peer`) |
/// | `status_grpc_connections` | connections open |
/// | `status_grpc_connections_closed_total{reason}` | connections the server closed: `handshake` (no request in time), `idle`, `shed` (to make room) |
/// | `status_grpc_accept_failures_total` | failed `accept` calls (out of descriptors, most often) |
///
/// Give it to `status_http::Routes::register_metrics` so that `/metrics` has them.
///
/// # Example
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use tonic::service::Routes;
///
/// let registry = status_core::Registry::new();
/// let health = status_grpc::HealthService::new(&registry);
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:50051").await?;
/// let server = status_grpc::serve(listener, Routes::new(health.clone().into_server()));
/// let mut prometheus = prometheus_client::registry::Registry::default();
/// status_grpc::metrics(&health, Some(server.stats()))(&mut prometheus);
/// server.await
/// # }
/// ```
pub fn metrics(
    health: &HealthService,
    stats: Option<Arc<ServerStats>>,
) -> impl FnOnce(&mut Registry) + Send + 'static {
    let health = health.clone();
    move |registry| {
        let open = health.clone();
        registry.register(
            "status_grpc_watches",
            "Watch streams open",
            Live::new(MetricType::Gauge, move |mut encoder| {
                encoder.encode_gauge(&i64::try_from(open.watches()).unwrap_or(i64::MAX))
            }),
        );
        registry.register(
            "status_grpc_watches_refused",
            "Watch streams refused, by the cap that refused them",
            Live::new(MetricType::Counter, move |mut encoder| {
                for (cap, count) in health.refused_watches_by_cap() {
                    encoder
                        .encode_family(&[("cap", cap)])?
                        .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                }
                Ok(())
            }),
        );
        let Some(stats) = stats else { return };
        let open = Arc::clone(&stats);
        registry.register(
            "status_grpc_connections",
            "gRPC connections open",
            Live::new(MetricType::Gauge, move |mut encoder| {
                encoder.encode_gauge(&i64::try_from(open.connections()).unwrap_or(i64::MAX))
            }),
        );
        let closed = Arc::clone(&stats);
        registry.register(
            "status_grpc_connections_closed",
            "gRPC connections the server closed, by reason",
            Live::new(MetricType::Counter, move |mut encoder| {
                for (reason, count) in [
                    ("handshake", closed.closed_handshake()),
                    ("idle", closed.closed_idle()),
                    ("shed", closed.shed()),
                ] {
                    encoder
                        .encode_family(&[("reason", reason)])?
                        .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                }
                Ok(())
            }),
        );
        registry.register(
            "status_grpc_accept_failures",
            "Failed accept calls on the gRPC listener",
            Live::new(MetricType::Counter, move |mut encoder| {
                encoder.encode_counter::<NoLabelSet, _, u64>(&stats.accept_failures(), None)
            }),
        );
    }
}

/// Writes one metric's value(s) into the encoder.
type Encode = Box<dyn Fn(MetricEncoder<'_>) -> Result<(), fmt::Error> + Send + Sync>;

/// A metric whose value is read when scraped.
struct Live {
    kind: MetricType,
    encode: Encode,
}

impl Live {
    fn new(
        kind: MetricType,
        encode: impl Fn(MetricEncoder<'_>) -> Result<(), fmt::Error> + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            encode: Box::new(encode),
        }
    }
}

impl fmt::Debug for Live {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Live").field("kind", &self.kind).finish()
    }
}

impl EncodeMetric for Live {
    fn encode(&self, encoder: MetricEncoder<'_>) -> Result<(), fmt::Error> {
        (self.encode)(encoder)
    }

    fn metric_type(&self) -> MetricType {
        self.kind
    }
}
