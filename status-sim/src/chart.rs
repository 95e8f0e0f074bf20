//! The latency distributions of several runs as one SVG chart.

use std::fmt::Write as _;

use crate::scenario::Run;

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
/// After the eighth run, colours come round again with dashes.
const DASHES: [&str; 3] = ["", "6 3", "2 2"];

/// An SVG chart of each run's latency distribution: for each latency on a logarithmic axis,
/// the share of measured requests answered within it (success or error: fast errors show as
/// a step at the left), one line per run, with the run's success rate in the legend. An
/// answer in 0 ms is drawn at 1 ms.
#[must_use]
pub fn latency_chart(runs: &[Run], title: &str) -> String {
    let mut f = Frame::new(900.0, 520.0, 330.0, title);
    #[allow(clippy::cast_precision_loss)]
    let max = runs
        .iter()
        .filter_map(|r| r.latencies.last())
        .max()
        .map_or(10.0, |&m| (m as f64).max(10.0));
    let decades = max.log10().ceil().max(1.0);
    let (left, plot_w) = (f.left, f.plot_w);
    let x = |ms: f64| left + (ms.max(1.0).log10() / decades) * plot_w;
    // Axes and grid.
    #[allow(clippy::cast_possible_truncation)]
    for d in 0..=decades as i32 {
        let ms = 10f64.powi(d);
        let px = x(ms);
        let _ = writeln!(
            f.svg,
            r##"<line x1="{px:.1}" y1="{}" x2="{px:.1}" y2="{:.1}" stroke="#ddd"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{ms} ms</text>"##,
            f.top,
            f.top + f.plot_h,
            f.top + f.plot_h + 18.0
        );
    }
    f.share_grid("#eee");
    f.x_label("latency (log scale): share of requests answered within it");
    for (i, run) in runs.iter().enumerate() {
        let n = run.latencies.len();
        if n == 0 {
            continue;
        }
        // One point per distinct latency (its last occurrence): at most a few thousand.
        let mut points = String::new();
        let mut prev = None;
        for (k, &ms) in run.latencies.iter().enumerate() {
            let last_of_value = run.latencies.get(k + 1) != Some(&ms);
            if !last_of_value {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let share = (k + 1) as f64 / n as f64;
            #[allow(clippy::cast_precision_loss)]
            let px = x(ms as f64);
            if let Some(py) = prev {
                let _ = write!(points, "{px:.1},{py:.1} ");
            }
            let py = f.y(share);
            let _ = write!(points, "{px:.1},{py:.1} ");
            prev = Some(py);
        }
        let name = format!("{} ({:.1}% ok)", run.scenario, run.summary.success * 100.0);
        f.line(i, 1.6, &points, &name);
    }
    f.end()
}

/// One line of a [`time_chart`]: its name and its points (seconds, share in `[0, 1]`).
#[derive(Debug, Clone)]
pub struct Series {
    /// The legend's words.
    pub name: String,
    /// (seconds, share) points, in time order.
    pub points: Vec<(f64, f64)>,
}

/// A shaded span of a [`time_chart`]: what was going on between two times (seconds).
#[derive(Debug, Clone)]
pub struct Span {
    /// The words written over it.
    pub name: String,
    /// From, in seconds.
    pub from: f64,
    /// To, in seconds.
    pub to: f64,
}

/// An SVG chart of shares over time: one line per series (0 to 100 %), shaded spans for
/// what happened meanwhile, a legend on the right.
#[must_use]
pub fn time_chart(title: &str, y_label: &str, series: &[Series], spans: &[Span]) -> String {
    let mut f = Frame::new(900.0, 440.0, 250.0, title);
    let end = series
        .iter()
        .filter_map(|s| s.points.last().map(|p| p.0))
        .fold(1.0_f64, f64::max);
    let (left, plot_w) = (f.left, f.plot_w);
    let x = |t: f64| left + t / end * plot_w;
    for span in spans {
        let (x0, x1) = (x(span.from), x(span.to));
        let _ = writeln!(
            f.svg,
            r##"<rect x="{x0:.1}" y="{}" width="{:.1}" height="{}" fill="#f2f2f2"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666">{}</text>"##,
            f.top,
            x1 - x0,
            f.plot_h,
            (x0 + x1) / 2.0,
            f.top + 14.0,
            span.name
        );
    }
    f.share_grid("#e4e4e4");
    let step = if end > 120.0 { 20.0 } else { 10.0 };
    let mut t = 0.0;
    while t <= end {
        let _ = writeln!(
            f.svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t:.0} s</text>"##,
            x(t),
            f.top + f.plot_h + 18.0
        );
        t += step;
    }
    f.x_label(y_label);
    for (i, line) in series.iter().enumerate() {
        let points: String = line
            .points
            .iter()
            .map(|&(t, share)| format!("{:.1},{:.1} ", x(t), f.y(share)))
            .collect();
        f.line(i, 1.8, &points, &line.name);
    }
    f.end()
}

/// A chart's frame: its size, its plot area, and the parts every chart here draws alike (the
/// title, the 0–100 % grid, the x axis's label, each line with its legend).
struct Frame {
    h: f64,
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    svg: String,
}

impl Frame {
    /// A `w` × `h` chart titled `title`, its legend `right` wide.
    fn new(w: f64, h: f64, right: f64, title: &str) -> Self {
        const LEFT: f64 = 60.0;
        const TOP: f64 = 40.0;
        const BOTTOM: f64 = 50.0;
        let mut svg = String::new();
        let _ = write!(
            svg,
            r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" font-family="system-ui, sans-serif" font-size="12">
<rect width="{w}" height="{h}" fill="white"/>
<text x="{LEFT}" y="22" font-size="15" font-weight="600">{title}</text>
"##
        );
        Self {
            h,
            left: LEFT,
            top: TOP,
            plot_w: w - LEFT - right,
            plot_h: h - TOP - BOTTOM,
            svg,
        }
    }

    /// The height of `share` (0 to 1).
    fn y(&self, share: f64) -> f64 {
        self.top + (1.0 - share) * self.plot_h
    }

    /// Horizontal lines every 10 %, labelled.
    fn share_grid(&mut self, stroke: &str) {
        for tenth in 0..=10 {
            let share = f64::from(tenth) / 10.0;
            let py = self.y(share);
            let _ = writeln!(
                self.svg,
                r##"<line x1="{}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{:.0}%</text>"##,
                self.left,
                self.left + self.plot_w,
                self.left - 6.0,
                py + 4.0,
                share * 100.0
            );
        }
    }

    /// The x axis's label, under the plot.
    fn x_label(&mut self, label: &str) {
        let _ = writeln!(
            self.svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            self.left + self.plot_w / 2.0,
            self.h - 10.0
        );
    }

    /// Line `i` through `points` (`x,y ` pairs), and its legend entry `name`.
    fn line(&mut self, i: usize, width: f64, points: &str, name: &str) {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[(i / COLORS.len()) % DASHES.len()];
        let _ = writeln!(
            self.svg,
            r##"<polyline fill="none" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}" points="{points}"/>"##
        );
        #[allow(clippy::cast_precision_loss)]
        let ly = self.top + 8.0 + i as f64 * 18.0;
        let lx = self.left + self.plot_w + 16.0;
        let _ = writeln!(
            self.svg,
            r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}">{name}</text>"##,
            lx + 18.0,
            lx + 24.0,
            ly + 4.0,
        );
    }

    /// The finished SVG.
    fn end(mut self) -> String {
        self.svg.push_str("</svg>\n");
        self.svg
    }
}
