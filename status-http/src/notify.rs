//! Notification sinks in `/metrics`: what each delivered, failed, dropped, and what waits.

use prometheus_client::encoding::NoLabelSet;
use prometheus_client::metrics::MetricType;
use status_notify::{Notifications, SinkStats};

use crate::live::Live;

/// Registers each sink's counts of `notifications` (give it to
/// [`Routes::register_metrics`](crate::Routes::register_metrics)):
/// `status_notify_delivered_total{sink}`, `status_notify_failed_attempts_total{sink}`,
/// `status_notify_dropped_total{sink}` (queue full or retried past the maximum age),
/// `status_notify_queued{sink}`, and `status_notify_untold_total` (notices told from outside
/// and dropped because the notifier was behind). A sink that never answers shows as failures
/// and drops here, and nowhere else.
pub fn notify_metrics(
    notifications: &Notifications,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static {
    let notifications = notifications.clone();
    move |metrics| {
        let per_sink = |pick: fn(&SinkStats) -> u64| {
            let notifications = notifications.clone();
            move || {
                notifications
                    .stats()
                    .iter()
                    .map(|s| (s.sink.clone(), pick(s)))
                    .collect::<Vec<_>>()
            }
        };
        metrics.register(
            "status_notify_delivered",
            "Notifications delivered, by sink",
            Live::counters("sink", per_sink(|s| s.delivered)),
        );
        metrics.register(
            "status_notify_failed_attempts",
            "Delivery attempts that failed (each retried until too old), by sink",
            Live::counters("sink", per_sink(|s| s.failed_attempts)),
        );
        metrics.register(
            "status_notify_dropped",
            "Notifications dropped: the queue was full, or retried past their maximum age",
            Live::counters("sink", per_sink(|s| s.dropped)),
        );
        let queued = per_sink(|s| s.queued as u64);
        metrics.register(
            "status_notify_queued",
            "Notifications waiting, by sink",
            Live::new(MetricType::Gauge, move |mut encoder| {
                for (sink, count) in queued() {
                    encoder
                        .encode_family(&[("sink", sink.as_str())])?
                        .encode_gauge(&i64::try_from(count).unwrap_or(i64::MAX))?;
                }
                Ok(())
            }),
        );
        let untold = notifications.clone();
        metrics.register(
            "status_notify_untold",
            "Notices told from outside (an audit trail) and dropped: the notifier was behind",
            Live::new(MetricType::Counter, move |mut encoder| {
                encoder.encode_counter::<NoLabelSet, _, u64>(&untold.untold(), None)
            }),
        );
    }
}
