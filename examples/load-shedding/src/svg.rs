//! The chart of one experiment: every response's latency at its send time, coloured by its
//! code, one panel per route on a shared scale, the disturbance shaded.

use std::fmt::Write as _;
use std::time::Duration;

use crate::{Experiment, Record, Summary};

/// One route's run, as the chart shows it.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// The panel's heading, e.g. the route and its settings.
    pub label: &'a str,
    /// Its answers.
    pub records: &'a [Record],
    /// Their figures.
    pub summary: &'a Summary,
    /// A deadline to draw as a dashed line, if the route has one.
    pub deadline: Option<Duration>,
}

const WIDTH: f64 = 960.0;
const PANEL: f64 = 300.0;
const TOP: f64 = 72.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 940.0;
const PLOT: f64 = 220.0;

/// The colour and name of a status code.
fn code_style(code: u16) -> (&'static str, &'static str) {
    match code {
        200 => ("#15803d", "200"),
        429 => ("#d97706", "429 queue full"),
        503 => ("#b91c1c", "503 waited too long / past the deadline"),
        0 => ("#6b7280", "no answer (client gave up)"),
        _ => ("#7c3aed", "other"),
    }
}

/// The chart of `experiment`'s `runs`, as an SVG document.
#[must_use]
pub fn chart(experiment: &Experiment, runs: &[Run<'_>]) -> String {
    let length = experiment.length().as_secs_f64().max(1.0);
    let slowest = runs
        .iter()
        .flat_map(|r| r.records.iter().map(|r| r.latency.as_secs_f64()))
        .fold(0.0_f64, f64::max);
    let top = nice_ceiling(slowest.max(0.5));
    let height = TOP + PANEL * runs.len() as f64 + 40.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="system-ui, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="{LEFT}" y="24" font-size="16" font-weight="600">{}</text>
<text x="{LEFT}" y="42" fill="#4b5563">{}</text>
<text x="{LEFT}" y="58" fill="#4b5563">Each dot is one response: x when it was sent, y how long it took. Shaded: the disturbance.</text>
"##,
        escape(experiment.title),
        escape(experiment.setup)
    );
    let (from, to) = experiment.disturbance();
    let x = |t: f64| LEFT + (RIGHT - LEFT) * t / length;
    for (i, run) in runs.iter().enumerate() {
        let panel_top = TOP + PANEL * i as f64 + 36.0;
        let bottom = panel_top + PLOT;
        let y = |v: f64| bottom - PLOT * (v / top).min(1.0);
        let s = run.summary;
        let codes: Vec<String> = s
            .codes
            .iter()
            .map(|(code, n)| {
                format!(
                    "{}: {n}",
                    code_style(*code).1.split(' ').next().unwrap_or("")
                )
            })
            .collect();
        let _ = write!(
            svg,
            r##"<text x="{LEFT}" y="{}" font-size="14" font-weight="600">{}</text>
<text x="{LEFT}" y="{}" fill="#374151">slowest 200: {:.2} s · during the disturbance: p50 {:.2} s, p99 {:.2} s, goodput {:.1}/s ({:.0} % of capacity) · answers {}</text>
<rect x="{:.1}" y="{panel_top}" width="{:.1}" height="{PLOT}" fill="#fde68a" fill-opacity="0.45"/>
<line x1="{LEFT}" y1="{bottom}" x2="{RIGHT}" y2="{bottom}" stroke="#9ca3af"/>
<line x1="{LEFT}" y1="{panel_top}" x2="{LEFT}" y2="{bottom}" stroke="#9ca3af"/>
"##,
            panel_top - 20.0,
            escape(run.label),
            panel_top - 5.0,
            s.slowest_ok.as_secs_f64(),
            s.disturbed_p50.as_secs_f64(),
            s.disturbed_p99.as_secs_f64(),
            s.goodput,
            s.goodput_share * 100.0,
            codes.join(", "),
            x(from.as_secs_f64()),
            x(to.as_secs_f64()) - x(from.as_secs_f64()),
        );
        for tick in ticks(top) {
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" y1="{0:.1}" x2="{RIGHT}" y2="{0:.1}" stroke="#e5e7eb"/><text x="{1}" y="{2:.1}" text-anchor="end" fill="#4b5563">{3} s</text>"##,
                y(tick),
                LEFT - 6.0,
                y(tick) + 4.0,
                trim(tick)
            );
        }
        let step = if length > 60.0 { 10.0 } else { 5.0 };
        let mut t = 0.0;
        while t <= length + 1e-9 {
            let _ = writeln!(
                svg,
                r##"<text x="{:.1}" y="{}" text-anchor="middle" fill="#4b5563">{} s</text>"##,
                x(t),
                bottom + 16.0,
                trim(t)
            );
            t += step;
        }
        if let Some(deadline) = run.deadline {
            let d = deadline.as_secs_f64();
            if d <= top {
                let _ = writeln!(
                    svg,
                    r##"<line x1="{LEFT}" y1="{0:.1}" x2="{RIGHT}" y2="{0:.1}" stroke="#b91c1c" stroke-dasharray="6 4"/><text x="{RIGHT}" y="{1:.1}" text-anchor="end" fill="#b91c1c">deadline {2} s</text>"##,
                    y(d),
                    y(d) - 4.0,
                    trim(d)
                );
            }
        }
        // The 200s last, on top: they are what the user wants to see.
        let mut records: Vec<&Record> = run.records.iter().collect();
        records.sort_by_key(|r| r.code == 200);
        for r in records {
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="1.8" fill="{}"/>"#,
                x(r.sent.as_secs_f64()),
                y(r.latency.as_secs_f64()),
                code_style(r.code).0
            );
        }
        svg.push('\n');
    }
    let legend_y = height - 16.0;
    let mut at = LEFT;
    for code in [200, 429, 503, 0] {
        let (colour, name) = code_style(code);
        let _ = writeln!(
            svg,
            r#"<circle cx="{at}" cy="{}" r="4" fill="{colour}"/><text x="{}" y="{legend_y}">{name}</text>"#,
            legend_y - 4.0,
            at + 8.0
        );
        at += 30.0 + 7.0 * name.len() as f64;
    }
    svg.push_str("</svg>\n");
    svg
}

/// The least of 1, 2 or 5 times a power of ten at or above `max`.
fn nice_ceiling(max: f64) -> f64 {
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|&c| c >= max)
        .unwrap_or(10.0 * power)
}

/// Five gridlines from zero to `top`.
fn ticks(top: f64) -> impl Iterator<Item = f64> {
    (0..=4).map(move |i| top * f64::from(i) / 4.0)
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_is_a_dot_on_the_shared_scale() {
        let experiment = Experiment::burst(0.1);
        let records = [
            Record {
                sent: Duration::ZERO,
                latency: Duration::from_millis(300),
                code: 200,
                work_ms: 300,
            },
            Record {
                sent: Duration::from_secs(1),
                latency: Duration::from_secs(4),
                code: 503,
                work_ms: 300,
            },
        ];
        let summary = Summary::of(&experiment, &records);
        let run = Run {
            label: "/demo/work <layer>",
            records: &records,
            summary: &summary,
            deadline: Some(Duration::from_secs(2)),
        };
        let svg = chart(&experiment, &[run, run]);
        assert_eq!(
            svg.matches("<circle cx").count(),
            2 * 2 + 4,
            "dots and legend"
        );
        assert!(svg.contains("/demo/work &lt;layer&gt;"));
        assert!(svg.contains("deadline 2 s"));
        assert!(svg.contains(">5 s</text>"), "the scale reaches the slowest");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }
}
