//! The study's statistics: over the middle half of the requests in issue order.

use serde::Serialize;

use crate::{Ms, Record};

/// The middle half of `records` (in issue order): the first quarter dropped, half kept, so
/// that neither the ramp-up nor the draining is measured.
#[must_use]
pub fn select_middle_half(records: &[Record]) -> &[Record] {
    let n = records.len();
    &records[n / 4..n / 4 + n / 2]
}

/// The `p` quantile of `sorted` (ascending), interpolated linearly at `p · (n − 1)`; 0 for
/// none.
#[must_use]
pub fn quantile(sorted: &[Ms], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let at = p.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // in 0..n
    let low = at.floor() as usize;
    let high = (low + 1).min(sorted.len() - 1);
    #[allow(clippy::cast_precision_loss)]
    let (a, b) = (sorted[low] as f64, sorted[high] as f64);
    a + (b - a) * (at - at.floor())
}

/// Latency quantiles, in ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// The fastest.
    pub min: f64,
    /// The median.
    pub p50: f64,
    /// The 95th percentile.
    pub p95: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

/// A run's statistics over the middle half of its requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Requests issued.
    pub total: usize,
    /// Requests measured: the middle half.
    pub selected: usize,
    /// The share of those whose last answer was not an error (a retry that succeeded counts).
    pub success: f64,
    /// Requests issued per second, over the span of their issue times.
    pub request_rate: f64,
    /// Answers per second, over the span of their answer times.
    pub response_rate: f64,
    /// From each request's first event to its last.
    pub latency: Latency,
}

/// The statistics of `records` (in issue order).
#[must_use]
pub fn summarize(records: &[Record]) -> Summary {
    let selected = select_middle_half(records);
    let mut latencies: Vec<Ms> = selected.iter().map(Record::latency).collect();
    latencies.sort_unstable();
    let ok = selected.iter().filter(|r| r.ok).count();
    let rate = |times: &mut dyn Iterator<Item = Ms>| {
        let (mut low, mut high, mut n) = (Ms::MAX, 0, 0usize);
        for t in times {
            low = low.min(t);
            high = high.max(t);
            n += 1;
        }
        #[allow(clippy::cast_precision_loss)]
        let per_second = if n > 1 && high > low {
            n as f64 * 1000.0 / (high - low) as f64
        } else {
            0.0
        };
        per_second
    };
    #[allow(clippy::cast_precision_loss)]
    let success = if selected.is_empty() {
        0.0
    } else {
        ok as f64 / selected.len() as f64
    };
    Summary {
        total: records.len(),
        selected: selected.len(),
        success,
        request_rate: rate(&mut selected.iter().map(|r| r.issued)),
        response_rate: rate(&mut selected.iter().map(|r| r.answered)),
        latency: Latency {
            min: quantile(&latencies, 0.0),
            p50: quantile(&latencies, 0.5),
            p95: quantile(&latencies, 0.95),
            p99: quantile(&latencies, 0.99),
            max: quantile(&latencies, 1.0),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(issued: Ms, answered: Ms, ok: bool) -> Record {
        Record {
            issued,
            answered,
            ok,
        }
    }

    #[test]
    fn the_middle_half_drops_a_quarter_and_keeps_half() {
        let records: Vec<Record> = (0..10).map(|i| record(i, i, true)).collect();
        let middle = select_middle_half(&records);
        assert_eq!(middle.first().unwrap().issued, 2);
        assert_eq!(middle.len(), 5);
        let records: Vec<Record> = (0..8).map(|i| record(i, i, true)).collect();
        let issued: Vec<Ms> = select_middle_half(&records)
            .iter()
            .map(|r| r.issued)
            .collect();
        assert_eq!(issued, [2, 3, 4, 5]);
    }

    #[test]
    fn quantiles_interpolate_at_p_times_n_minus_one() {
        let sorted = [10, 20, 30, 40, 100];
        assert_eq!(quantile(&sorted, 0.0), 10.0);
        assert_eq!(quantile(&sorted, 0.5), 30.0);
        // 0.95 · 4 = 3.8: 40 + 0.8 · 60.
        assert!((quantile(&sorted, 0.95) - 88.0).abs() < 1e-9);
        assert_eq!(quantile(&sorted, 1.0), 100.0);
        assert_eq!(quantile(&[7], 0.99), 7.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn summary_counts_the_last_answer_and_rates_over_spans() {
        // Middle half of 8: requests 2..6, issued at 200, 300, 400, 500 ms.
        let records: Vec<Record> = (0..8)
            .map(|i| record(i * 100, i * 100 + 10 * i, i % 2 == 0))
            .collect();
        let s = summarize(&records);
        assert_eq!((s.total, s.selected), (8, 4));
        assert_eq!(s.success, 0.5);
        // 4 issued over 300 ms; answered at 220, 330, 440, 550: 4 over 330 ms.
        assert!((s.request_rate - 4000.0 / 300.0).abs() < 1e-9);
        assert!((s.response_rate - 4000.0 / 330.0).abs() < 1e-9);
        assert_eq!(s.latency.min, 20.0);
        assert_eq!(s.latency.max, 50.0);
        assert_eq!(s.latency.p50, 35.0);
    }
}
