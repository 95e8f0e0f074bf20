//! Dashboard panels: what the traffic mechanisms (a shedding layer, a node pool, the culler)
//! show on `/status` beside the dependencies, read when the page renders.
//!
//! A panel is a title and a function returning its [`PanelView`]: a few facts and charts of
//! recent history. The dashboard draws the charts as inline SVG on the server, so they need no
//! JavaScript and update with the rest of the live part. [`traffic::shed_panel`] makes the
//! shedding layer's panel.
//!
//! [`traffic::shed_panel`]: crate::traffic::shed_panel
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use status_http::panel::{Chart, Panel, PanelView};
//!
//! let panel = Panel::new("Orders", || {
//!     PanelView::new()
//!         .fact("Taken today", "42")
//!         .chart(Chart::new("Orders per second", Duration::from_secs(60))
//!             .series("orders", vec![(Duration::from_secs(30), 3.0), (Duration::ZERO, 5.0)]))
//! });
//! let app: axum::Router = status_http::Routes::new(&status_core::Registry::new())
//!     .panel(panel)
//!     .build();
//! ```

use std::sync::Arc;
use std::time::Duration;

/// One panel of the dashboard: a title and how to read what it shows.
#[derive(Clone)]
pub struct Panel {
    title: String,
    read: Arc<dyn Fn() -> PanelView + Send + Sync>,
}

impl std::fmt::Debug for Panel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Panel")
            .field("title", &self.title)
            .finish_non_exhaustive()
    }
}

impl Panel {
    /// A panel titled `title`, its content read by `read` at each render of the page.
    pub fn new(
        title: impl Into<String>,
        read: impl Fn() -> PanelView + Send + Sync + 'static,
    ) -> Self {
        Self {
            title: title.into(),
            read: Arc::new(read),
        }
    }

    /// The panel's title.
    #[must_use]
    pub fn title(&self) -> &str {
        &self.title
    }

    /// What the panel shows now.
    #[must_use]
    pub fn read(&self) -> PanelView {
        (self.read)()
    }
}

/// What a panel shows: facts (label and value), a table, and charts, in that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PanelView {
    /// Label and value, e.g. `("Limit", "12")`.
    pub facts: Vec<(String, String)>,
    /// A table: its header and rows (e.g. a pool's nodes).
    pub table: Option<(Vec<String>, Vec<Vec<String>>)>,
    /// Charts of recent history.
    pub charts: Vec<Chart>,
}

impl PanelView {
    /// Nothing yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a fact.
    #[must_use]
    pub fn fact(mut self, label: impl Into<String>, value: impl Into<String>) -> Self {
        self.facts.push((label.into(), value.into()));
        self
    }

    /// Sets the table: a header and rows of as many cells.
    #[must_use]
    pub fn table(mut self, header: Vec<String>, rows: Vec<Vec<String>>) -> Self {
        self.table = Some((header, rows));
        self
    }

    /// Adds a chart.
    #[must_use]
    pub fn chart(mut self, chart: Chart) -> Self {
        self.charts.push(chart);
        self
    }
}

/// Lines over the last `window`, on one scale from zero.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// What the chart shows.
    pub title: String,
    /// How far back it reaches.
    pub window: Duration,
    /// Its lines, drawn in order.
    pub series: Vec<Series>,
}

impl Chart {
    /// An empty chart over the last `window`.
    #[must_use]
    pub fn new(title: impl Into<String>, window: Duration) -> Self {
        Self {
            title: title.into(),
            window,
            series: Vec::new(),
        }
    }

    /// Adds a line of `(age, value)` points: `age` is how long ago, oldest first.
    #[must_use]
    pub fn series(mut self, name: impl Into<String>, points: Vec<(Duration, f64)>) -> Self {
        self.series.push(Series {
            name: name.into(),
            points,
        });
        self
    }
}

/// One line of a [`Chart`].
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its name, in the legend.
    pub name: String,
    /// `(age, value)` points, oldest first.
    pub points: Vec<(Duration, f64)>,
}

/// The chart's drawing area, in SVG user units.
pub(crate) const WIDTH: f64 = 300.0;
pub(crate) const HEIGHT: f64 = 80.0;

/// A chart as the template prints it: an SVG polyline per series on a shared scale.
#[derive(Debug)]
pub(crate) struct ChartRender {
    pub(crate) title: String,
    /// "last 5 min".
    pub(crate) span: String,
    /// The top of the scale, as printed.
    pub(crate) top: String,
    pub(crate) series: Vec<SeriesRender>,
}

#[derive(Debug)]
pub(crate) struct SeriesRender {
    pub(crate) name: String,
    /// `series-0` … `series-3`, coloured by the stylesheet.
    pub(crate) class: String,
    /// `x,y x,y …`
    pub(crate) points: String,
    /// The last value, as printed.
    pub(crate) last: String,
}

/// A panel as the template prints it.
#[derive(Debug)]
pub(crate) struct PanelRender {
    pub(crate) title: String,
    pub(crate) facts: Vec<(String, String)>,
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    pub(crate) charts: Vec<ChartRender>,
}

pub(crate) fn render(panel: &Panel) -> PanelRender {
    let view = panel.read();
    let (header, rows) = view.table.unwrap_or_default();
    PanelRender {
        title: panel.title.clone(),
        facts: view.facts,
        header,
        rows,
        charts: view.charts.iter().map(render_chart).collect(),
    }
}

fn render_chart(chart: &Chart) -> ChartRender {
    let window = chart.window.as_secs_f64().max(1.0);
    let max = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|&(_, v)| v))
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let top = nice_ceiling(max);
    let series = chart
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| SeriesRender {
            name: s.name.clone(),
            class: format!("series-{}", i % 4),
            points: {
                // Ten minutes of samples are hundreds of points a series: written into one
                // string, in tenths by integer arithmetic (float formatting with a precision
                // was a third of a dashboard request's CPU).
                let mut points = String::with_capacity(s.points.len() * 12);
                let kept = s
                    .points
                    .iter()
                    .filter(|(age, v)| age.as_secs_f64() <= window && v.is_finite());
                for &(age, v) in kept {
                    let x = WIDTH * (1.0 - age.as_secs_f64() / window);
                    let y = HEIGHT - 2.0 - (HEIGHT - 4.0) * (v.max(0.0) / top);
                    if !points.is_empty() {
                        points.push(' ');
                    }
                    push_tenths(&mut points, x);
                    points.push(',');
                    push_tenths(&mut points, y);
                }
                points
            },
            last: s
                .points
                .last()
                .map_or_else(|| "—".to_owned(), |&(_, v)| number(v)),
        })
        .collect();
    ChartRender {
        title: chart.title.clone(),
        span: span(chart.window),
        top: number(top),
        series,
    }
}

/// Appends `v` rounded to one decimal, as `{v:.1}` would print it for the chart's range.
fn push_tenths(out: &mut String, v: f64) {
    use std::fmt::Write as _;
    // Coordinates lie within the chart; the clamp keeps the cast exact whatever comes in.
    let tenths = (v * 10.0).round().clamp(-1e12, 1e12) as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    let tenths = tenths.unsigned_abs();
    let _ = write!(out, "{sign}{}.{}", tenths / 10, tenths % 10);
}

/// The least of 1, 2 or 5 times a power of ten at or above `max` (at least 1).
fn nice_ceiling(max: f64) -> f64 {
    if max <= 1.0 {
        return 1.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&c| c >= max)
        .unwrap_or(10.0 * power)
}

fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn span(window: Duration) -> String {
    let s = window.as_secs();
    if s >= 120 && s.is_multiple_of(60) {
        format!("last {} min", s / 60)
    } else {
        format!("last {s} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenths_print_as_the_formatter_does() {
        let mut rng = status_core::Rng::new(7);
        for _ in 0..10_000 {
            let v = (rng.next_f64() - 0.1) * 700.0;
            // Exact halves may round either way in binary; the chart cannot tell.
            if ((v * 10.0).fract().abs() - 0.5).abs() < 1e-6 {
                continue;
            }
            let mut ours = String::new();
            push_tenths(&mut ours, v);
            let theirs = format!("{v:.1}");
            assert_eq!(ours, theirs.replace("-0.0", "0.0"), "{v}");
        }
    }

    #[test]
    fn scales_are_round_and_never_zero() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(1.5), 2.0);
        assert_eq!(nice_ceiling(12.0), 20.0);
        assert_eq!(nice_ceiling(50.0), 50.0);
        assert_eq!(nice_ceiling(51.0), 100.0);
    }

    #[test]
    fn points_are_placed_by_age_on_the_shared_scale() {
        let chart = Chart::new("c", Duration::from_secs(100))
            .series(
                "a",
                vec![
                    (Duration::from_secs(200), 7.0), // older than the window: not drawn
                    (Duration::from_secs(100), 0.0),
                    (Duration::ZERO, 10.0),
                ],
            )
            .series("b", vec![(Duration::from_secs(50), 5.0)]);
        let render = render_chart(&chart);
        assert_eq!(render.top, "10");
        assert_eq!(render.series[0].points, "0.0,78.0 300.0,2.0");
        assert_eq!(render.series[1].points, "150.0,40.0");
        assert_eq!(render.series[1].class, "series-1");
        assert_eq!(render.series[0].last, "10");
        assert_eq!(render.span, "last 100 s");
    }
}
