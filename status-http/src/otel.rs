//! The OTLP export in `/metrics`: what it sent, what failed, what it dropped, what waits.

use status_otel::{Otlp, OtlpStats};

use crate::live::Live;

/// Registers the export's counts (give it to
/// [`Routes::register_metrics`](crate::Routes::register_metrics)):
/// `status_otlp_requests_total{signal}` (accepted by the collector),
/// `status_otlp_failed_requests_total{signal}` (no answer in time, refused, an error
/// status), `status_otlp_dropped_total{signal}` (log records and spans that found their queue
/// full, or whose batch the collector did not accept: `logs` or `traces`) and
/// `status_otlp_queued` (waiting to be sent). `signal` is `metrics`, `logs` or `traces`. A
/// collector that is down shows here, and as the `otlp-export` dependency.
pub fn otel_metrics(
    otlp: &Otlp,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static {
    let otlp = otlp.clone();
    move |metrics| {
        let per_signal = |pick: fn(&OtlpStats) -> [u64; 3]| {
            let otlp = otlp.clone();
            move || {
                let counts = pick(&otlp.stats());
                OtlpStats::SIGNALS
                    .iter()
                    .zip(counts)
                    .map(|(signal, n)| ((*signal).to_owned(), n))
                    .collect::<Vec<_>>()
            }
        };
        metrics.register(
            "status_otlp_requests",
            "OTLP export requests the collector accepted, by signal",
            Live::counters("signal", per_signal(|s| s.sent)),
        );
        metrics.register(
            "status_otlp_failed_requests",
            "OTLP export requests that failed (no answer in time, refused, an error status), by signal",
            Live::counters("signal", per_signal(|s| s.failed)),
        );
        metrics.register(
            "status_otlp_dropped",
            "Log records and spans dropped: their queue was full, or their batch was not accepted; by signal",
            Live::counters("signal", {
                let otlp = otlp.clone();
                move || {
                    let stats = otlp.stats();
                    vec![
                        ("logs".to_owned(), stats.dropped_logs),
                        ("traces".to_owned(), stats.dropped_spans),
                    ]
                }
            }),
        );
        let queued = otlp.clone();
        metrics.register(
            "status_otlp_queued",
            "Log records and spans waiting to be sent",
            Live::gauge(move || i64::try_from(queued.stats().queued).unwrap_or(i64::MAX)),
        );
    }
}
