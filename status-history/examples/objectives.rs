//! What computing objectives costs on a history of 1,000 dependencies: 31 days written
//! through the real SQLite store (the last 25 hours minute by minute), then 100 objectives
//! of 30 days read as `History::slo` reads them, against an uptime read of 24 hours (what
//! `/healthcheck/dependencies/{id}/uptime` reads) measured in the same run; and the beat
//! (`History::slos`, every objective, every 15 s) end to end through a `History` on the
//! same file.
//!
//! ```sh
//! cargo run --release -p status-history --example objectives -- [DEPS] [OBJECTIVES] [SVG]
//! ```

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use status_history::objective::{Objective, SloReport, Windows};
use status_history::{
    Bucket, History, Retention, Series, Spent, SqliteStore, UptimeReport, Weights, Window, Writes,
};

/// A small deterministic generator (xorshift): the same history every run.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn bucket(start: i64, ms: u64, dice: &mut Dice) -> Bucket {
    let bad = if dice.next().is_multiple_of(50) {
        ms / 10
    } else {
        0
    };
    Bucket {
        start,
        spent: Spent {
            ok: ms - bad,
            minor: 0,
            major: bad / 2,
            outage: bad - bad / 2,
            muted: 0,
        },
        checks: ms / 1000,
        ..Bucket::empty(start)
    }
}

fn quantiles(mut took: Vec<Duration>) -> (f64, f64) {
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    (ms(took[took.len() / 2]), ms(took[took.len() * 99 / 100]))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let deps: usize = args.next().map_or(1000, |a| a.parse().expect("DEPS"));
    let count: usize = args.next().map_or(100, |a| a.parse().expect("OBJECTIVES"));
    let svg = args.next();
    let dir = std::env::temp_dir().join(format!("status-history-slo-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("history.db");
    let end: DateTime<Utc> = Utc::now().duration_trunc_minute();
    let start = end - chrono::Duration::days(31);
    let mut store = SqliteStore::open(&path, start.timestamp_millis())
        .unwrap()
        .store;
    let names: Vec<Series> = (0..deps)
        .map(|i| Series::Dependency(format!("dependency-{i:04}")))
        .collect();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let began = Instant::now();
    let minutes_from = end - chrono::Duration::hours(25);
    let mut t = start;
    while t < end {
        let step = if t >= minutes_from {
            chrono::Duration::minutes(1)
        } else {
            chrono::Duration::hours(1)
        };
        let ms = step.num_milliseconds().cast_unsigned();
        let mut writes = Writes::default();
        for series in &names {
            writes
                .batch
                .minutes
                .push((series.clone(), bucket(t.timestamp(), ms, &mut dice)));
        }
        t += step;
        writes.batch.covered_until = Some(t.timestamp_millis());
        store.write(&writes).unwrap();
    }
    eprintln!("seeded in {:.0} s", began.elapsed().as_secs_f64());
    let retention = Retention::default();
    let objectives: Vec<Objective> = (0..count)
        .map(|i| {
            let series = names[(i * 7919) % deps].clone();
            Objective::new(&format!("slo-{i}"), series, 0.999, "30d").unwrap()
        })
        .collect();

    // The baseline, in the same run: an uptime read of 24 hours of each target.
    let uptime: Vec<Duration> = (0..5)
        .flat_map(|_| objectives.iter())
        .map(|o| {
            let asked = Instant::now();
            let w = Window::new(end - chrono::Duration::hours(24), end, end, &retention).unwrap();
            let buckets = store
                .buckets(o.target(), w.tier, w.from.timestamp(), w.to.timestamp())
                .unwrap();
            let r = UptimeReport::of(o.target().clone(), w, &buckets, Weights::DEFAULT);
            assert!(r.uptime.is_some());
            asked.elapsed()
        })
        .collect();
    // Each objective as `History::slo` reads it: its window and six burn windows, a read per
    // tier.
    let objective: Vec<Duration> = (0..5)
        .flat_map(|_| objectives.iter())
        .map(|o| {
            let asked = Instant::now();
            let windows = Windows::of(o, end, &retention).unwrap();
            let read: Vec<_> = windows
                .reads()
                .into_iter()
                .map(|(tier, from, to)| {
                    (
                        tier,
                        store
                            .buckets(o.target(), tier, from.timestamp(), to.timestamp())
                            .unwrap(),
                    )
                })
                .collect();
            let (spent, burns) = windows.spent(|tier| {
                read.iter()
                    .find(|(t, _)| *t == tier)
                    .map_or(&[][..], |(_, b)| b.as_slice())
            });
            let r = SloReport::of(o, end, &spent, &burns);
            assert!(r.observed_ms > 0);
            asked.elapsed()
        })
        .collect();
    drop(store);

    // The beat end to end: every objective through a History on the same file.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (first, beats): (Duration, Vec<Duration>) = runtime.block_on(async {
        let registry = status_core::Registry::new();
        let history = History::sqlite(&path).objectives(objectives.clone()).open();
        history.attach(&registry);
        history.restored().await;
        // The first read after a start also reads back the alarms kept and the exclusions.
        let asked = Instant::now();
        assert_eq!(history.slos().await.unwrap().len(), count);
        let first = asked.elapsed();
        let mut took = Vec::new();
        for _ in 0..20 {
            let asked = Instant::now();
            let reports = history.slos().await.unwrap();
            assert_eq!(reports.len(), count);
            took.push(asked.elapsed());
        }
        history.close().await;
        (first, took)
    });

    let (u50, u99) = quantiles(uptime);
    let (o50, o99) = quantiles(objective);
    let (b50, b99) = quantiles(beats);
    println!("## Objectives at {deps} dependencies, {count} objectives of 30 days\n");
    println!("| read | p50 | p99 | against an uptime read of 24 h |\n|---|---|---|---|");
    println!("| uptime over 24 h (1,440 minute buckets), the baseline | {u50:.3} ms | {u99:.3} ms | 1.00 |");
    println!(
        "| one objective (30 days of days, 25 h of minutes, 3 days of hours) | {o50:.3} ms | {o99:.3} ms | {:.2} |",
        o50 / u50
    );
    println!(
        "| every objective, the beat (`History::slos`, through the store's thread) | {b50:.1} ms | {b99:.1} ms | {:.1} |",
        b50 / u50
    );
    println!(
        "| the first beat after a start (the alarms kept and the exclusions read back too) | {:.1} ms | — | {:.1} |",
        first.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3 / u50
    );
    println!(
        "\nThe beat every 15 s takes {:.2} % of a core at its median.",
        b50 / 15_000.0 * 100.0
    );
    if let Some(svg) = svg {
        let bars = [
            ("uptime, 24 h", u50),
            ("one objective", o50),
            (&*format!("{count} objectives (the beat)"), b50),
        ];
        let top = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
        let mut out = String::from(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 640 170\" font-family=\"sans-serif\" font-size=\"12\">\n",
        );
        out += &format!("<text x=\"10\" y=\"18\" font-weight=\"bold\">Reading objectives at {deps} dependencies (median, ms; log scale)</text>\n");
        for (i, (label, ms)) in bars.iter().enumerate() {
            let y = 36 + i * 40;
            // A log scale: the beat is a hundred times one read.
            let w = ((ms * 1000.0).ln().max(0.0) / (top * 1000.0).ln() * 380.0).max(2.0);
            out += &format!(
                "<text x=\"10\" y=\"{}\">{label}</text><rect x=\"200\" y=\"{y}\" width=\"{w:.1}\" height=\"24\" fill=\"#2563eb\"/><text x=\"{:.1}\" y=\"{}\">{ms:.3} ms</text>\n",
                y + 16,
                205.0 + w,
                y + 16
            );
        }
        out += "</svg>\n";
        std::fs::write(&svg, out).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

trait Minute {
    fn duration_trunc_minute(self) -> Self;
}

impl Minute for DateTime<Utc> {
    fn duration_trunc_minute(self) -> Self {
        Utc.timestamp_opt(self.timestamp() - self.timestamp() % 60, 0)
            .unwrap()
    }
}
