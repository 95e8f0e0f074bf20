//! A simulated year of history at 1,000 dependencies, written through the real store (the
//! recorder's minute buckets, rolled up to hours and days, pruned by the default retention):
//! how large the file grows, and how long the uptime reads the routes make take on it (the
//! history page's tiles are measured by `cargo bench -p status-http --bench history_page`).
//!
//! ```sh
//! cargo run --release -p status-history --example year -- [DEPS] [DAYS] [SVG]
//! ```
//!
//! Beyond the last day, each hour is written as one minute bucket holding the hour (the
//! roll-ups to hours and days are the same; the minutes are pruned after 25 hours anyway);
//! the last 25 hours are written minute by minute, as the driver writes them. Every
//! dependency changes level four times a day on average, each change a transition.

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use status_core::CheckStatus;
use status_history::{
    Bucket, Retention, Series, Spent, SqliteStore, TransitionRecord, UptimeReport, Weights, Window,
    Writes,
};

/// A small deterministic generator (xorshift): the same year every run.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn chance(&mut self, per_million: u64) -> bool {
        self.next() % 1_000_000 < per_million
    }
}

fn bucket(start: i64, ms: u64, checks: u64, dice: &mut Dice) -> Bucket {
    // Mostly OK; now and then minutes of MAJOR or OUTAGE.
    let bad = if dice.chance(20_000) { ms / 10 } else { 0 };
    let (major, outage) = if dice.chance(500_000) {
        (bad, 0)
    } else {
        (0, bad)
    };
    Bucket {
        start,
        spent: Spent {
            ok: ms - bad,
            minor: 0,
            major,
            outage,
            muted: 0,
        },
        checks,
        failures: if outage > 0 { checks / 10 } else { 0 },
        duration_min_us: 800 + dice.next() % 400,
        duration_sum_us: checks * 1_500,
        duration_max_us: 5_000 + dice.next() % 20_000,
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let deps: usize = args.next().map_or(1000, |a| a.parse().expect("DEPS"));
    let days: i64 = args.next().map_or(365, |a| a.parse().expect("DAYS"));
    let svg = args.next();
    let dir = std::env::temp_dir().join(format!("status-history-year-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history.db");
    let end: DateTime<Utc> = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    let start = end - chrono::Duration::days(days);
    let mut store = SqliteStore::open(&path, start.timestamp_millis())
        .unwrap()
        .store;
    let retention = Retention::default();
    let names: Vec<Series> = (0..deps)
        .map(|i| Series::Dependency(format!("dependency-{i:04}")))
        .collect();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let mut levels = vec![CheckStatus::Ok; deps];
    let mut sizes: Vec<(f64, f64)> = Vec::new();
    let began = Instant::now();
    let mut written = 0u64;
    let minutes_from = end - chrono::Duration::hours(25);
    let mut t = start;
    while t < end {
        let minute = t >= minutes_from;
        let step = if minute {
            chrono::Duration::minutes(1)
        } else {
            chrono::Duration::hours(1)
        };
        let ms = step.num_milliseconds().cast_unsigned();
        let mut writes = Writes::default();
        for (i, series) in names.iter().enumerate() {
            writes.batch.minutes.push((
                series.clone(),
                bucket(t.timestamp(), ms, ms / 1000, &mut dice),
            ));
            // Four changes a day on average.
            let per_million = (4.0 * step.num_seconds() as f64 / 86_400.0 * 1e6) as u64;
            if dice.chance(per_million) {
                let to = if levels[i] == CheckStatus::Ok {
                    CheckStatus::Major
                } else {
                    CheckStatus::Ok
                };
                writes.batch.transitions.push(TransitionRecord {
                    series: series.clone(),
                    at: t.timestamp_millis() + 1_000,
                    from: Some(levels[i]),
                    to,
                    message: format!(
                        "{} responded in {} ms (threshold 250 ms)",
                        series.name(),
                        dice.next() % 2_000
                    ),
                    blocked_by: Vec::new(),
                });
                levels[i] = to;
            }
        }
        t += step;
        writes.batch.covered_until = Some(t.timestamp_millis());
        written += writes.rows() as u64;
        store.write(&writes).unwrap();
        if t.timestamp() % 86_400 == 0 {
            store.prune(t.timestamp_millis(), &retention).unwrap();
            let day = (t - start).num_days();
            if day % 5 == 0 || t >= end {
                #[allow(clippy::cast_precision_loss)]
                sizes.push((day as f64, store.size().unwrap() as f64 / 1e6));
                eprintln!("day {day}: {:.1} MB", sizes.last().unwrap().1);
            }
        }
    }
    store.prune(end.timestamp_millis(), &retention).unwrap();
    store
        .connection()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let took = began.elapsed();
    let size = store.size().unwrap();
    let file = std::fs::metadata(&path).unwrap().len();
    let count = |sql: &str| -> i64 { store.connection().query_row(sql, [], |r| r.get(0)).unwrap() };
    println!("## A simulated year of history: {deps} dependencies, {days} days\n");
    println!("| what | value |\n|---|---|");
    println!(
        "| rows written | {written} (in {:.0} s) |",
        took.as_secs_f64()
    );
    println!(
        "| minute buckets kept | {} |",
        count("SELECT count(*) FROM buckets WHERE tier = 0")
    );
    println!(
        "| hour buckets kept | {} |",
        count("SELECT count(*) FROM buckets WHERE tier = 1")
    );
    println!(
        "| day buckets kept | {} |",
        count("SELECT count(*) FROM buckets WHERE tier = 2")
    );
    println!(
        "| transitions kept | {} |",
        count("SELECT count(*) FROM transitions")
    );
    println!(
        "| database size (pages in use) | {:.1} MB |",
        size as f64 / 1e6
    );
    println!("| file on disk | {:.1} MB |", file as f64 / 1e6);

    // Reads, as the routes make them.
    let now = end;
    let timings = |label: &str, window: chrono::Duration| {
        let mut took: Vec<Duration> = (0..500)
            .map(|i| {
                let series = &names[(i * 7919) % deps];
                let asked = Instant::now();
                let w = Window::new(now - window, now, now, &retention).unwrap();
                let buckets = store
                    .buckets(series, w.tier, w.from.timestamp(), w.to.timestamp())
                    .unwrap();
                let report = UptimeReport::of(series.clone(), w, &buckets, Weights::DEFAULT);
                assert!(report.uptime.is_some());
                asked.elapsed()
            })
            .collect();
        took.sort();
        println!(
            "| uptime over {label} ({:?} buckets) | p50 {:.2} ms, p99 {:.2} ms |",
            Window::new(now - window, now, now, &retention)
                .unwrap()
                .tier,
            took[took.len() / 2].as_secs_f64() * 1e3,
            took[took.len() * 99 / 100].as_secs_f64() * 1e3
        );
    };
    timings("24 h", chrono::Duration::hours(24));
    timings("30 days", chrono::Duration::days(30));
    timings("365 days", chrono::Duration::days(365));
    if let Some(svg) = svg {
        std::fs::write(&svg, chart(&sizes, deps)).unwrap();
        println!("\nchart: {svg}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The database's size over the simulated year, against the 250 MB bound.
fn chart(sizes: &[(f64, f64)], deps: usize) -> String {
    use std::fmt::Write as _;
    let (w, h, left, top, plot_w, plot_h) = (760.0, 380.0, 70.0, 50.0, 650.0, 250.0);
    let max_day = sizes.iter().map(|p| p.0).fold(1.0, f64::max);
    let top_mb = 260.0;
    let x = |d: f64| left + d / max_day * plot_w;
    let y = |mb: f64| top + plot_h - mb / top_mb * plot_h;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"##
    );
    let _ = writeln!(s, r##"<rect width="{w}" height="{h}" fill="#fff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="24" font-size="15" font-weight="bold">History database size over a simulated year, {deps} dependencies (SQLite)</text>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="40" fill="#555">cargo run --release -p status-history --example year -- {deps} 365 docs/history-year.svg</text>"##
    );
    for mb in [0.0, 50.0, 100.0, 150.0, 200.0, 250.0] {
        let _ = writeln!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" text-anchor="end">{mb:.0} MB</text>"##,
            left + plot_w,
            y(mb),
            y(mb),
            left - 6.0,
            y(mb) + 4.0
        );
    }
    let _ = writeln!(
        s,
        r##"<line x1="{left}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#b91c1c" stroke-dasharray="6 4"/><text x="{}" y="{:.1}" fill="#b91c1c" text-anchor="end">the 250 MB bound</text>"##,
        left + plot_w,
        y(250.0),
        y(250.0),
        left + plot_w,
        y(250.0) - 6.0
    );
    let mut day = 0.0;
    while day <= max_day {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{}" text-anchor="middle">day {day:.0}</text>"##,
            x(day),
            top + plot_h + 18.0
        );
        day += 60.0;
    }
    let points: String = sizes
        .iter()
        .map(|&(d, mb)| format!("{:.1},{:.1} ", x(d), y(mb)))
        .collect();
    let _ = writeln!(
        s,
        r##"<polyline points="{points}" fill="none" stroke="#2563eb" stroke-width="2"/>"##
    );
    if let Some(&(d, mb)) = sizes.last() {
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#2563eb">{mb:.0} MB after {d:.0} days</text>"##,
            x(d),
            y(mb) - 8.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="{}" fill="#555">Kept: minutes 25 h, hours 31 days, days 400 days, transitions 90 days (four changes a day a dependency).</text>"##,
        h - 30.0
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="{}" fill="#555">Before its last day the simulation writes an hour at a time: the last day's minute buckets (about 60 MB) come at the end.</text>"##,
        h - 14.0
    );
    s.push_str("</svg>\n");
    s
}
