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
    const W: f64 = 900.0;
    const H: f64 = 520.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 330.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 50.0;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    #[allow(clippy::cast_precision_loss)]
    let max = runs
        .iter()
        .filter_map(|r| r.latencies.last())
        .max()
        .map_or(10.0, |&m| (m as f64).max(10.0));
    let decades = max.log10().ceil().max(1.0);
    let x = |ms: f64| LEFT + (ms.max(1.0).log10() / decades) * plot_w;
    let y = |share: f64| TOP + (1.0 - share) * plot_h;

    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="system-ui, sans-serif" font-size="12">
<rect width="{W}" height="{H}" fill="white"/>
<text x="{LEFT}" y="22" font-size="15" font-weight="600">{title}</text>
"##
    );
    // Axes and grid.
    #[allow(clippy::cast_possible_truncation)]
    for d in 0..=decades as i32 {
        let ms = 10f64.powi(d);
        let px = x(ms);
        let _ = writeln!(
            svg,
            r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" stroke="#ddd"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{ms} ms</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
    }
    for tenth in 0..=10 {
        let share = f64::from(tenth) / 10.0;
        let py = y(share);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{:.0}%</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            py + 4.0,
            share * 100.0
        );
    }
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">latency (log scale): share of requests answered within it</text>"##,
        LEFT + plot_w / 2.0,
        H - 10.0
    );
    for (i, run) in runs.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[(i / COLORS.len()) % DASHES.len()];
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
            let py = y(share);
            let _ = write!(points, "{px:.1},{py:.1} ");
            prev = Some(py);
        }
        let _ = writeln!(
            svg,
            r##"<polyline fill="none" stroke="{color}" stroke-width="1.6" stroke-dasharray="{dash}" points="{points}"/>"##
        );
        #[allow(clippy::cast_precision_loss)]
        let ly = TOP + 8.0 + i as f64 * 18.0;
        let lx = LEFT + plot_w + 16.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}">{} ({:.1}% ok)</text>"##,
            lx + 18.0,
            lx + 24.0,
            ly + 4.0,
            run.scenario,
            run.summary.success * 100.0
        );
    }
    svg.push_str("</svg>\n");
    svg
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
    const W: f64 = 900.0;
    const H: f64 = 440.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 250.0;
    const TOP: f64 = 40.0;
    const BOTTOM: f64 = 50.0;
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let end = series
        .iter()
        .filter_map(|s| s.points.last().map(|p| p.0))
        .fold(1.0_f64, f64::max);
    let x = |t: f64| LEFT + t / end * plot_w;
    let y = |share: f64| TOP + (1.0 - share) * plot_h;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="system-ui, sans-serif" font-size="12">
<rect width="{W}" height="{H}" fill="white"/>
<text x="{LEFT}" y="22" font-size="15" font-weight="600">{title}</text>
"##
    );
    for span in spans {
        let (x0, x1) = (x(span.from), x(span.to));
        let _ = writeln!(
            svg,
            r##"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{plot_h}" fill="#f2f2f2"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#666">{}</text>"##,
            x1 - x0,
            (x0 + x1) / 2.0,
            TOP + 14.0,
            span.name
        );
    }
    for tenth in 0..=10 {
        let share = f64::from(tenth) / 10.0;
        let py = y(share);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end">{:.0}%</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            py + 4.0,
            share * 100.0
        );
    }
    let step = if end > 120.0 { 20.0 } else { 10.0 };
    let mut t = 0.0;
    while t <= end {
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t:.0} s</text>"##,
            x(t),
            TOP + plot_h + 18.0
        );
        t += step;
    }
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{y_label}</text>"##,
        LEFT + plot_w / 2.0,
        H - 10.0
    );
    for (i, line) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[(i / COLORS.len()) % DASHES.len()];
        let points: String = line
            .points
            .iter()
            .map(|&(t, share)| format!("{:.1},{:.1} ", x(t), y(share)))
            .collect();
        let _ = writeln!(
            svg,
            r##"<polyline fill="none" stroke="{color}" stroke-width="1.8" stroke-dasharray="{dash}" points="{points}"/>"##
        );
        #[allow(clippy::cast_precision_loss)]
        let ly = TOP + 8.0 + i as f64 * 18.0;
        let lx = LEFT + plot_w + 16.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}">{}</text>"##,
            lx + 18.0,
            lx + 24.0,
            ly + 4.0,
            line.name
        );
    }
    svg.push_str("</svg>\n");
    svg
}
