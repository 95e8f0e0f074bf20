//! One kind of metric for every mechanism: read from a closure when scraped, so that the
//! dashboard, the metrics and the mechanism share one state and nothing is copied ahead of a
//! scrape. The shedding layer, the node pool, the culler and the fleet register theirs this
//! way.

use std::fmt;

#[cfg(any(
    feature = "traffic",
    feature = "fleet",
    feature = "notify",
    feature = "otel"
))]
use prometheus_client::encoding::NoLabelSet;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;

/// Writes one metric's value(s) into the encoder.
type Encode = Box<dyn Fn(MetricEncoder<'_>) -> Result<(), fmt::Error> + Send + Sync>;

/// A metric whose value is read when scraped.
pub(crate) struct Live {
    kind: MetricType,
    encode: Encode,
}

impl Live {
    /// A metric of `kind`, written by `encode` at each scrape.
    pub(crate) fn new(
        kind: MetricType,
        encode: impl Fn(MetricEncoder<'_>) -> Result<(), fmt::Error> + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            encode: Box::new(encode),
        }
    }

    /// A gauge of the value `read` answers.
    #[cfg(any(feature = "traffic", feature = "otel"))]
    pub(crate) fn gauge(read: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Self::new(MetricType::Gauge, move |mut encoder| {
            encoder.encode_gauge(&read())
        })
    }

    /// A counter family with one series a label value: `label` = each name `read` answers.
    #[cfg(any(
        feature = "traffic",
        feature = "fleet",
        feature = "notify",
        feature = "otel"
    ))]
    pub(crate) fn counters(
        label: &'static str,
        read: impl Fn() -> Vec<(String, u64)> + Send + Sync + 'static,
    ) -> Self {
        Self::new(MetricType::Counter, move |mut encoder| {
            for (value, count) in read() {
                encoder
                    .encode_family(&[(label, value.as_str())])?
                    .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
            }
            Ok(())
        })
    }
}

impl fmt::Debug for Live {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Live")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
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

/// `n` as a gauge's value.
#[cfg(feature = "traffic")]
pub(crate) fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
