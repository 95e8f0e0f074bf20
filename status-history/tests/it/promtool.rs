//! The workbook's burn-rate alerts, evaluated by Prometheus's own `promtool test rules` over
//! the same minute series as ours: the same alerts fire at the same minutes.
//!
//! Four days of minutes with outages, slow stretches and muted time, from a fixed seed; our
//! report at every minute (every window read from minutes), and Prometheus's rules,
//! written as Sloth and Pyrra write them, over two gauges a minute (bad and observed
//! milliseconds). `promtool` comes with Debian's `prometheus` package (the test command
//! installs it).

use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use status_core::CheckStatus;
use status_history::objective::{Objective, SloReport, Windows, ALERT_RULES};
use status_history::{Bucket, Retention, Series, Spent, Tier};

const MINUTES: i64 = 4 * 1_440 + 120;

/// A small generator of our own: the schedule is the same at every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Minute `i`'s bucket: mostly OK; outages of a few minutes to a few hours, MAJOR stretches,
/// minutes partly down, and muted minutes.
fn minutes() -> Vec<Spent> {
    let mut rng = Lcg(7);
    let mut out = Vec::new();
    let mut level = CheckStatus::Ok;
    let mut left = 0;
    let mut muted = false;
    for _ in 0..MINUTES {
        if left == 0 {
            (level, left) = match rng.next(10) {
                0 => (CheckStatus::Outage, 1 + rng.next(180)),
                1 => (CheckStatus::Major, 1 + rng.next(400)),
                2 => (CheckStatus::Minor, 1 + rng.next(60)),
                _ => (CheckStatus::Ok, 60 + rng.next(900)),
            };
            muted = rng.next(12) == 0;
        }
        left -= 1;
        let mut s = Spent::default();
        let part = rng.next(60_001);
        s.add(level, muted, part);
        s.add(CheckStatus::Ok, false, 60_000 - part);
        out.push(s);
    }
    out
}

#[test]
fn promtool_fires_the_workbook_alerts_at_the_minutes_ours_do() {
    let Ok(out) = Command::new("promtool").arg("--version").output() else {
        panic!("promtool is not installed: Debian's `prometheus` package brings it (scripts/test installs it)");
    };
    assert!(out.status.success());
    let objective = Objective::new("db", Series::Dependency("db".into()), 0.99, "30d").unwrap();
    let spent = minutes();
    let t0 = Utc
        .timestamp_opt(1_800_000_000 - 1_800_000_000 % 86_400, 0)
        .unwrap();
    let buckets: Vec<Bucket> = spent
        .iter()
        .enumerate()
        .map(|(i, s)| Bucket {
            spent: *s,
            ..Bucket::empty((t0 + chrono::Duration::minutes(i as i64)).timestamp())
        })
        .collect();
    // Every burn window read from minutes, as Prometheus reads the gauges.
    let retention = Retention {
        minutes: Duration::from_secs(5 * 86_400),
        ..Retention::default()
    };
    let gauge = |f: &dyn Fn(&Spent) -> u64| {
        // The sample at minute j is minute j − 1's bucket; the first is 0.
        std::iter::once(0)
            .chain(spent.iter().map(f))
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let bad = gauge(&|s| objective.bad(s));
    let observed = gauge(&|s| s.unmuted());

    let names = ["SloPageFast", "SloPageSlow", "SloTicket"];
    let mut rules = String::from("groups:\n  - name: slo\n    rules:\n");
    for (rule, name) in ALERT_RULES.iter().zip(names) {
        let ratio = |w: &str| {
            format!("(sum_over_time(slo_bad_ms{{slo=\"db\"}}[{w}]) / sum_over_time(slo_observed_ms{{slo=\"db\"}}[{w}]))")
        };
        let threshold = format!("({:?} * (1 - {:?}))", rule.factor, objective.objective());
        writeln!(
            rules,
            "      - alert: {name}\n        expr: {} > {threshold} and {} > {threshold}\n        labels:\n          severity: {}",
            ratio(rule.long),
            ratio(rule.short),
            rule.severity.as_str()
        )
        .unwrap();
    }
    let mut tests = format!(
        "rule_files: [rules.yml]\nevaluation_interval: 30s\ntests:\n  - interval: 1m\n    input_series:\n      - series: 'slo_bad_ms{{slo=\"db\"}}'\n        values: '{bad}'\n      - series: 'slo_observed_ms{{slo=\"db\"}}'\n        values: '{observed}'\n    alert_rule_test:\n"
    );
    let mut fired = [0usize; 3];
    for m in 1..=MINUTES {
        let now = t0 + chrono::Duration::minutes(m);
        let windows = Windows::of(&objective, now, &retention).unwrap();
        assert!(windows.burns.iter().all(|w| w.tier == Tier::Minute));
        let (total, burns) = windows.spent(|_| &buckets[..]);
        let report = SloReport::of(&objective, now, &total, &burns);
        for (i, (alert, name)) in report.alerts.iter().zip(names).enumerate() {
            // Prometheus 2's ranges hold both ends: its rules evaluated 30 s past the minute
            // (`evaluation_interval: 30s`), [1h] holds the 60 samples of the minutes
            // [m − 60, m), as our window does. Evaluated on the minute it would hold 61, and
            // this test fails.
            write!(
                tests,
                "      - eval_time: {m}m30s\n        alertname: {name}\n        exp_alerts:"
            )
            .unwrap();
            if alert.firing {
                fired[i] += 1;
                writeln!(
                    tests,
                    "\n          - exp_labels:\n              severity: {}\n              slo: db",
                    alert.severity.as_str()
                )
                .unwrap();
            } else {
                tests.push_str(" []\n");
            }
        }
    }
    // The schedule exercises each alert both ways.
    let evals = MINUTES as usize;
    for (name, n) in names.iter().zip(fired) {
        assert!(
            n > 0 && n < evals,
            "{name} fired at {n} of {evals} evaluations"
        );
    }
    let dir = std::env::temp_dir().join(format!("status-promtool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("rules.yml"), rules).unwrap();
    std::fs::write(dir.join("tests.yml"), tests).unwrap();
    let out = Command::new("promtool")
        .args(["test", "rules", "tests.yml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let said: String = said
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(40)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(out.status.success(), "promtool disagrees:\n{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
