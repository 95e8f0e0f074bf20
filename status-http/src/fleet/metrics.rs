//! The fleet's metrics, for `/metrics`.

use prometheus_client::encoding::NoLabelSet;
use prometheus_client::metrics::MetricType;
use status_fleet::{BEAT_BUCKETS, REJECTIONS};

use super::Fleet;
use crate::live::Live;

/// The fleet's metrics, read when scraped: `status_fleet_datacenter_healthy{dc}` (1 when the
/// data center is healthy by the rule, 0 when not, failing open or not: this is for people)
/// and, when the source has a store, `status_fleet_exchange_seconds` (a histogram of the beats
/// into it) and `status_fleet_rejected_total{reason}` (what it refused or healed).
pub(crate) fn register_metrics(fleet: &Fleet, metrics: &mut prometheus_client::registry::Registry) {
    let views = fleet.clone();
    metrics.register(
        "status_fleet_datacenter_healthy",
        "Whether each data center is healthy by the fleet's rule (1) or not (0)",
        Live::new(MetricType::Gauge, move |mut encoder| {
            for dc in &views.view().datacenters {
                encoder
                    .encode_family(&[("dc", dc.datacenter.as_str())])?
                    .encode_gauge(&i64::from(dc.healthy))?;
            }
            Ok(())
        }),
    );
    let Some(_) = fleet.source.stats() else {
        return;
    };
    let beats = fleet.clone();
    metrics.register(
        "status_fleet_exchange_seconds",
        "How long this instance's beats into the fleet's store took",
        Live::new(MetricType::Histogram, move |mut encoder| {
            let Some(stats) = beats.source.stats() else {
                return Ok(());
            };
            let mut cumulative = 0;
            let buckets: Vec<(f64, u64)> = BEAT_BUCKETS
                .iter()
                .copied()
                .chain([f64::INFINITY])
                .zip(stats.buckets)
                .map(|(le, n)| {
                    cumulative += n;
                    (le, cumulative)
                })
                .collect();
            encoder.encode_histogram::<NoLabelSet>(stats.seconds, stats.beats, &buckets, None)
        }),
    );
    let refusals = fleet.clone();
    metrics.register(
        "status_fleet_rejected",
        "What the fleet's store refused or healed, by reason",
        Live::counters("reason", move || {
            refusals.source.stats().map_or_else(Vec::new, |stats| {
                REJECTIONS
                    .iter()
                    .map(|r| (*r).to_owned())
                    .zip(stats.rejected)
                    .collect()
            })
        }),
    );
}
