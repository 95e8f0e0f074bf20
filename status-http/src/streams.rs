//! Event streams shared fairly (status-http-core's [`StreamLimits`]), and their counts in
//! `/metrics`.

#[cfg(feature = "metrics")]
use std::sync::atomic::Ordering;
#[cfg(feature = "metrics")]
use std::sync::Arc;

pub(crate) use status_http_core::streams::{address, Peer, Refused, StreamLimits};

/// The event streams' counts in `/metrics`: `status_http_event_streams{stream}` open now, and
/// `status_http_event_streams_refused_total{stream, reason}` (`address`: its share taken,
/// `total`: every place taken).
#[cfg(feature = "metrics")]
pub(crate) fn register_metrics(
    limits: Vec<Arc<StreamLimits>>,
    registry: &mut prometheus_client::registry::Registry,
) {
    use prometheus_client::encoding::NoLabelSet;
    use prometheus_client::metrics::MetricType;

    use crate::live::Live;
    let open = limits.clone();
    registry.register(
        "status_http_event_streams",
        "Event streams open now, by stream (page, dashboard)",
        Live::new(MetricType::Gauge, move |mut encoder| {
            for l in &open {
                let n = i64::try_from(l.open()).unwrap_or(i64::MAX);
                encoder
                    .encode_family(&[("stream", l.kind)])?
                    .encode_gauge(&n)?;
            }
            Ok(())
        }),
    );
    registry.register(
        "status_http_event_streams_refused",
        "Event streams refused, by stream and reason: address (the client's share taken), total (every place taken)",
        Live::new(MetricType::Counter, move |mut encoder| {
            for l in &limits {
                for (reason, count) in [
                    ("address", &l.refused_address),
                    ("total", &l.refused_total),
                ] {
                    encoder
                        .encode_family(&[("stream", l.kind), ("reason", reason)])?
                        .encode_counter::<NoLabelSet, _, u64>(&count.load(Ordering::Relaxed), None)?;
                }
            }
            Ok(())
        }),
    );
}
