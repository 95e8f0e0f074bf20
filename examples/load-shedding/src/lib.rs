//! The two experiments of Helpshift's load-shedding article (`seeds/helpshift-load-shedding.txt`),
//! on a shortened timescale, against the quickstart's `/demo/work` (behind the shedding layer)
//! and `/demo/work-unprotected` (the same handler on the same worker slots, without it):
//!
//! - [`Experiment::burst`]: steady load at about half the workers' capacity, then a burst at
//!   four times capacity for a few seconds, then steady load again.
//! - [`Experiment::slowdown`]: steady load at 80 % of capacity while each request's work slows
//!   from 300 to 400 ms for a while (capacity falls below the load), then recovers.
//!
//! The load is open-loop, as real clients are: requests go out on schedule whether or not
//! earlier ones were answered. Every response's send time, latency and code is recorded;
//! [`Summary`] reduces them to the figures BENCHMARKS.md reports and [`svg::chart`] draws them.
//!
//! The binary (`cargo run --release -p load-shedding`) runs them over real sockets; the tests
//! run short versions on Tokio's paused time.

pub mod svg;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

/// A stretch of constant load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    /// How long it lasts.
    pub length: Duration,
    /// Requests sent per second, evenly spaced.
    pub rate: f64,
    /// Work per request, in milliseconds (`/demo/work?ms=`).
    pub work_ms: u64,
    /// Whether this is the disturbance (the burst, the slowdown).
    pub disturbance: bool,
}

/// One experiment: phases played in order against one route.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Short name, for file names: `burst`, `slowdown`.
    pub name: &'static str,
    /// What it shows, for the chart.
    pub title: &'static str,
    /// Its load and capacity, for the chart.
    pub setup: &'static str,
    /// The quickstart's worker slots (`--demo-workers`).
    pub workers: usize,
    /// Its phases.
    pub phases: Vec<Phase>,
}

impl Experiment {
    /// 10 s at 15 requests/s, 5 s at 100/s (the workers serve 26.7/s), 20 s at 15/s; every
    /// length multiplied by `scale`. The article's burst lasted under a minute, on 3 s of work.
    #[must_use]
    pub fn burst(scale: f64) -> Self {
        let phase = |seconds: f64, rate: f64, disturbance: bool| Phase {
            length: Duration::from_secs_f64(seconds * scale),
            rate,
            work_ms: 300,
            disturbance,
        };
        Self {
            name: "burst",
            title: "A burst at 3.75× capacity: 100 requests/s for 5 s",
            setup: "15 requests/s before and after; 8 workers × 300 ms of work serve 26.7/s.",
            workers: 8,
            phases: vec![
                phase(10.0, 15.0, false),
                phase(5.0, 100.0, true),
                phase(20.0, 15.0, false),
            ],
        }
    }

    /// 23 requests/s throughout (86 % of capacity); work 300 ms for 10 s, 400 ms for 30 s
    /// (capacity 20/s, 15 % below the load), 300 ms for 30 s; every length multiplied by
    /// `scale`. The article slowed 3 s of work to 4 s for six minutes.
    #[must_use]
    pub fn slowdown(scale: f64) -> Self {
        let phase = |seconds: f64, work_ms: u64, disturbance: bool| Phase {
            length: Duration::from_secs_f64(seconds * scale),
            rate: 23.0,
            work_ms,
            disturbance,
        };
        Self {
            name: "slowdown",
            title: "Work slows from 300 to 400 ms for 30 s under steady load",
            setup: "23 requests/s throughout; 8 workers serve 26.7/s at 300 ms, 20/s at 400 ms.",
            workers: 8,
            phases: vec![
                phase(10.0, 300, false),
                phase(30.0, 400, true),
                phase(30.0, 300, false),
            ],
        }
    }

    /// When the disturbance starts and ends, from the start.
    #[must_use]
    pub fn disturbance(&self) -> (Duration, Duration) {
        let mut at = Duration::ZERO;
        let mut window = (Duration::ZERO, Duration::ZERO);
        for phase in &self.phases {
            if phase.disturbance {
                window = (at, at + phase.length);
            }
            at += phase.length;
        }
        window
    }

    /// How long the load lasts.
    #[must_use]
    pub fn length(&self) -> Duration {
        self.phases.iter().map(|p| p.length).sum()
    }

    /// Requests the workers can serve per second during the disturbance.
    #[must_use]
    pub fn capacity(&self) -> f64 {
        let work = self
            .phases
            .iter()
            .find(|p| p.disturbance)
            .map_or(300, |p| p.work_ms);
        self.workers as f64 * 1000.0 / work as f64
    }

    /// Every request's send time (from the start) and work.
    #[must_use]
    pub fn schedule(&self) -> Vec<(Duration, u64)> {
        let mut requests = Vec::new();
        let mut start = Duration::ZERO;
        for phase in &self.phases {
            let gap = Duration::from_secs_f64(1.0 / phase.rate);
            let mut at = start;
            while at < start + phase.length {
                requests.push((at, phase.work_ms));
                at += gap;
            }
            start += phase.length;
        }
        requests
    }
}

/// One answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When the request was sent, from the start.
    pub sent: Duration,
    /// How long its answer took.
    pub latency: Duration,
    /// The answer's status code; 0 when the client gave up or the connection failed.
    pub code: u16,
    /// The work it asked for, in milliseconds.
    pub work_ms: u64,
}

impl Record {
    /// When the answer came, from the start.
    #[must_use]
    pub fn answered(&self) -> Duration {
        self.sent + self.latency
    }
}

/// Plays `experiment` against `route` (`/demo/work` or `/demo/work-unprotected`): sends each
/// request on schedule through `send` (which takes a path and answers a status code, 0 for no
/// answer), and records every answer, in send order.
pub async fn drive<F, Fut>(experiment: &Experiment, route: &str, send: F) -> Vec<Record>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = u16> + Send + 'static,
{
    let start = Instant::now();
    let mut answers = JoinSet::new();
    for (at, work_ms) in experiment.schedule() {
        tokio::time::sleep_until(start + at).await;
        let sent = Instant::now();
        let answer = send(format!("{route}?ms={work_ms}"));
        answers.spawn(async move {
            let code = answer.await;
            Record {
                sent: sent - start,
                latency: sent.elapsed(),
                code,
                work_ms,
            }
        });
    }
    let mut records = answers.join_all().await;
    records.sort_by_key(|r| r.sent);
    records
}

/// What one run shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Answers by status code (0: none).
    pub codes: BTreeMap<u16, usize>,
    /// The slowest answer of any kind.
    pub slowest: Duration,
    /// The slowest 200.
    pub slowest_ok: Duration,
    /// The median and 99th percentile latency of requests sent during the disturbance.
    pub disturbed_p50: Duration,
    /// See `disturbed_p50`.
    pub disturbed_p99: Duration,
    /// 200s answered during the disturbance, per second.
    pub goodput: f64,
    /// `goodput` as a share of the workers' capacity.
    pub goodput_share: f64,
    /// From the disturbance's end to the first request sent after it that was answered 200.
    pub first_ok_after: Option<Duration>,
    /// From the disturbance's end until requests are answered normally again (200, within
    /// 1.5× their work): the send time of the last request after the end answered otherwise;
    /// zero if none was.
    pub normal_after: Duration,
    /// The median latency of the requests sent in the last quarter of the run.
    pub tail_p50: Duration,
}

impl Summary {
    /// The figures of `records` from a run of `experiment`.
    #[must_use]
    pub fn of(experiment: &Experiment, records: &[Record]) -> Self {
        let (from, to) = experiment.disturbance();
        let mut codes = BTreeMap::new();
        for r in records {
            *codes.entry(r.code).or_insert(0) += 1;
        }
        let ok = |r: &&Record| r.code == 200;
        let disturbed: Vec<Duration> = records
            .iter()
            .filter(|r| r.sent >= from && r.sent < to)
            .map(|r| r.latency)
            .collect();
        let goodput_count = records
            .iter()
            .filter(ok)
            .filter(|r| r.answered() >= from && r.answered() < to)
            .count();
        let goodput = goodput_count as f64 / (to - from).as_secs_f64().max(1e-9);
        let normal = |r: &Record| {
            r.code == 200 && r.latency.as_secs_f64() <= 1.5 * r.work_ms as f64 / 1000.0
        };
        let after: Vec<&Record> = records.iter().filter(|r| r.sent >= to).collect();
        let tail_from = experiment.length().mul_f64(0.75);
        let tail: Vec<Duration> = records
            .iter()
            .filter(|r| r.sent >= tail_from)
            .map(|r| r.latency)
            .collect();
        Self {
            codes,
            slowest: records.iter().map(|r| r.latency).max().unwrap_or_default(),
            slowest_ok: records
                .iter()
                .filter(ok)
                .map(|r| r.latency)
                .max()
                .unwrap_or_default(),
            disturbed_p50: percentile(&disturbed, 0.5),
            disturbed_p99: percentile(&disturbed, 0.99),
            goodput,
            goodput_share: goodput / experiment.capacity(),
            first_ok_after: after.iter().find(|r| r.code == 200).map(|r| r.sent - to),
            normal_after: after
                .iter()
                .rev()
                .find(|r| !normal(r))
                .map_or(Duration::ZERO, |r| r.sent - to),
            tail_p50: percentile(&tail, 0.5),
        }
    }
}

/// The `q` quantile of `values` (nearest rank); zero when empty.
#[must_use]
pub fn percentile(values: &[Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The records as CSV: `sent_ms,latency_ms,code,work_ms`.
#[must_use]
pub fn csv(records: &[Record]) -> String {
    let mut out = String::from("sent_ms,latency_ms,code,work_ms\n");
    for r in records {
        out.push_str(&format!(
            "{},{},{},{}\n",
            r.sent.as_millis(),
            r.latency.as_millis(),
            r.code,
            r.work_ms
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_follows_the_phases() {
        let burst = Experiment::burst(1.0);
        let schedule = burst.schedule();
        assert_eq!(schedule.len(), 150 + 500 + 300);
        assert_eq!(
            burst.disturbance(),
            (Duration::from_secs(10), Duration::from_secs(15))
        );
        assert!((burst.capacity() - 26.67).abs() < 0.01);
        let slow = Experiment::slowdown(1.0);
        assert_eq!(slow.capacity(), 20.0);
        assert!(slow.schedule().iter().all(|&(at, work)| {
            (work == 400) == (at >= Duration::from_secs(10) && at < Duration::from_secs(40))
        }));
    }

    #[test]
    fn summaries_count_goodput_and_recovery() {
        let experiment = Experiment {
            name: "t",
            title: "t",
            setup: "t",
            workers: 1,
            phases: vec![
                Phase {
                    length: Duration::from_secs(1),
                    rate: 1.0,
                    work_ms: 1000,
                    disturbance: false,
                },
                Phase {
                    length: Duration::from_secs(2),
                    rate: 1.0,
                    work_ms: 1000,
                    disturbance: true,
                },
                Phase {
                    length: Duration::from_secs(4),
                    rate: 1.0,
                    work_ms: 1000,
                    disturbance: false,
                },
            ],
        };
        let s = Duration::from_secs;
        let record = |sent, latency, code| Record {
            sent: s(sent),
            latency: s(latency),
            code,
            work_ms: 1000,
        };
        let records = [
            record(0, 0, 200),
            record(1, 1, 200), // answered at 2 s: in the disturbance
            record(2, 5, 200), // answered at 7 s: outside
            record(3, 0, 503), // after the end: not normal
            record(4, 3, 200), // slow: not normal
            record(5, 1, 200),
        ];
        let summary = Summary::of(&experiment, &records);
        assert_eq!(summary.goodput, 0.5);
        assert_eq!(summary.goodput_share, 0.5);
        assert_eq!(summary.first_ok_after, Some(s(1)));
        assert_eq!(summary.normal_after, s(1));
        assert_eq!(summary.slowest, s(5));
        assert_eq!(summary.codes[&503], 1);
        assert_eq!(summary.disturbed_p99, s(5));
    }
}
