//! What a measured value is counted in, so that an exporter can name it and scale it as its
//! conventions have it (OpenTelemetry: seconds for durations, `1` for ratios, `By` for sizes).

/// The unit of a value a check measured ([`CheckOutcome::with_value_in`](super::CheckOutcome::with_value_in)).
/// The value is reported as measured (`/healthcheck`'s `observedValue` keeps it); exporters
/// convert it to their canonical unit.
///
/// # Example
///
/// ```
/// use status_core::check::{CheckOutcome, Unit};
/// use status_core::CheckStatus;
///
/// let outcome = CheckOutcome::new(CheckStatus::Ok, "12.5 ms").with_value_in(12.5, Unit::Milliseconds);
/// assert_eq!(outcome.unit(), Some(Unit::Milliseconds));
/// assert_eq!(Unit::Milliseconds.canonical(12.5), 0.0125);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unit {
    /// A duration in milliseconds (a latency).
    Milliseconds,
    /// A duration in seconds.
    Seconds,
    /// A moment, in seconds since the Unix epoch (a certificate's expiry).
    UnixSeconds,
    /// A count of things (a queue's depth, connections).
    Count,
    /// A share from 0 to 1 (a failure ratio, a utilization).
    Ratio,
    /// A share from 0 to 100.
    Percent,
    /// A size in bytes.
    Bytes,
    /// A size in mebibytes (2^20 bytes).
    Mebibytes,
}

/// What a value measures, whatever its unit: how an exporter names one metric per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Quantity {
    /// A duration, canonically in seconds.
    Duration,
    /// A moment, canonically in seconds since the Unix epoch.
    Timestamp,
    /// A count, canonically a number of things.
    Count,
    /// A share, canonically from 0 to 1.
    Ratio,
    /// A size, canonically in bytes.
    Size,
}

impl Unit {
    /// What it measures.
    #[must_use]
    pub const fn quantity(self) -> Quantity {
        match self {
            Self::Milliseconds | Self::Seconds => Quantity::Duration,
            Self::UnixSeconds => Quantity::Timestamp,
            Self::Count => Quantity::Count,
            Self::Ratio | Self::Percent => Quantity::Ratio,
            Self::Bytes | Self::Mebibytes => Quantity::Size,
        }
    }

    /// `value` in its quantity's canonical unit: seconds, seconds since the epoch, a count,
    /// a share from 0 to 1, bytes.
    #[must_use]
    pub fn canonical(self, value: f64) -> f64 {
        match self {
            Self::Milliseconds => value / 1000.0,
            Self::Percent => value / 100.0,
            Self::Mebibytes => value * 1_048_576.0,
            Self::Seconds | Self::UnixSeconds | Self::Count | Self::Ratio | Self::Bytes => value,
        }
    }
}
