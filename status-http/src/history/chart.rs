//! The 24-hour chart of check duration on a dependency's history page: an SVG the server
//! draws, a point a minute.

use chrono::{DateTime, Duration, Utc};
use status_history::{Series, Tier};

/// A line on the duration chart.
pub(crate) struct Line {
    pub(super) class: &'static str,
    pub(super) name: &'static str,
    pub(super) points: String,
    pub(super) last: String,
}

/// The last 24 hours of check durations, a point a minute: the mean and the slowest.
pub(crate) async fn duration_chart(
    history: &status_history::History,
    series: &Series,
    now: DateTime<Utc>,
) -> (String, Vec<Line>) {
    let from = now - Duration::hours(24);
    let Ok(report) = history
        .buckets(series.clone(), Tier::Minute, from, now)
        .await
    else {
        return (String::new(), Vec::new());
    };
    let checked: Vec<_> = report.iter().filter(|b| b.checks > 0).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = |b: &status_history::Bucket| b.duration_sum_us as f64 / b.checks as f64 / 1000.0;
    #[allow(clippy::cast_precision_loss)]
    let max = |b: &status_history::Bucket| b.duration_max_us as f64 / 1000.0;
    let top = checked
        .iter()
        .map(|b| max(b))
        .fold(0.0f64, f64::max)
        .max(1.0);
    let start = from.timestamp();
    #[allow(clippy::cast_precision_loss)]
    let points = |value: &dyn Fn(&status_history::Bucket) -> f64| -> String {
        checked
            .iter()
            .map(|b| {
                let x = (b.start - start) as f64 / 86_400.0 * 300.0;
                let y = 78.0 - value(b) / top * 76.0;
                format!("{x:.1},{y:.1}")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let last = |value: &dyn Fn(&status_history::Bucket) -> f64| {
        checked
            .last()
            .map_or_else(|| "—".to_owned(), |b| format!("{:.1} ms", value(b)))
    };
    (
        format!("{top:.0} ms"),
        vec![
            Line {
                class: "series-0",
                name: "mean",
                points: points(&mean),
                last: last(&mean),
            },
            Line {
                class: "series-1",
                name: "slowest",
                points: points(&max),
                last: last(&max),
            },
        ],
    )
}
