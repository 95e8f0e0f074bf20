//! Every uptime answer held against a brute-force replay of what happened: the recorder,
//! the real SQLite store (a file, reopened at each restart) and its tiers, and the window
//! arithmetic together. Restarts are part of the schedule: a graceful one writes what its
//! run recorded, a kill loses what was recorded after its run's last durable write, and
//! every run's time adds to the others', whatever minute, hour or day they share.

use std::time::Duration;

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use status_core::CheckStatus;
use status_history::{
    Recorder, Retention, Series, SqliteStore, Tier, UptimeReport, Weights, Window, Writes,
};

/// 2026-03-01 00:00:00 UTC plus a little, in ms: not aligned to anything.
const T0: i64 = 1_772_323_200_000 + 17_345;

#[derive(Debug, Clone)]
enum Step {
    /// The level changes.
    Level(CheckStatus),
    /// A check ends, muted or not.
    Check { muted: bool, us: u64 },
    /// The driver flushes, with aggregates or not.
    Flush(bool),
    /// The process stops and starts again: gracefully (a last flush), or killed.
    Restart { kill: bool },
}

fn level() -> impl Strategy<Value = CheckStatus> {
    prop_oneof![
        Just(CheckStatus::Ok),
        Just(CheckStatus::Minor),
        Just(CheckStatus::Major),
        Just(CheckStatus::Outage)
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => level().prop_map(Step::Level),
        3 => (any::<bool>(), 1u64..5_000_000).prop_map(|(muted, us)| Step::Check { muted, us }),
        2 => any::<bool>().prop_map(Step::Flush),
        1 => any::<bool>().prop_map(|kill| Step::Restart { kill }),
    ]
}

/// What happened, replayed by brute force: ms in each level (unmuted) and muted, between
/// `from` and `to`, from the steps alone. Each run counts from its first level up to its
/// last durable write: where it stopped when it stopped gracefully, its last flush with
/// aggregates when it was killed.
fn replay(steps: &[(i64, Step)], end: i64, from: i64, to: i64) -> [u64; 5] {
    let mut out = [0u64; 5];
    // This run's stretches (start, end, slot), and where its last durable write stands.
    let mut run: Vec<(i64, i64, usize)> = Vec::new();
    let mut durable = i64::MIN;
    let mut state: Option<(CheckStatus, bool)> = None;
    let mut muted = false;
    let mut at = i64::MIN;
    let account = |state: Option<(CheckStatus, bool)>, a: i64, b: i64, run: &mut Vec<_>| {
        if let Some((level, muted)) = state {
            if b > a {
                let slot = if muted { 4 } else { level.severity() as usize };
                run.push((a, b, slot));
            }
        }
    };
    let close = |run: &mut Vec<(i64, i64, usize)>, bound: i64, out: &mut [u64; 5]| {
        for (a, b, slot) in run.drain(..) {
            let (a, b) = (a.max(from), b.min(to).min(bound));
            if b > a {
                out[slot] += (b - a) as u64;
            }
        }
    };
    for (t, step) in steps {
        let t = (*t).max(at);
        account(state, at, t, &mut run);
        at = t;
        match step {
            Step::Level(l) => state = Some((*l, muted)),
            Step::Check { muted: m, .. } => {
                muted = *m;
                state = state.map(|(l, _)| (l, muted));
            }
            Step::Flush(true) => durable = t,
            Step::Flush(false) => {}
            Step::Restart { kill } => {
                close(&mut run, if *kill { durable } else { t }, &mut out);
                (state, muted, durable) = (None, false, i64::MIN);
            }
        }
    }
    account(state, at, end, &mut run);
    close(&mut run, end, &mut out);
    out
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("status-history-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("history.db")
}

fn run(steps: &[(i64, Step)], end: i64, path: &std::path::Path) -> SqliteStore {
    let mut store = SqliteStore::open(path, T0).unwrap().store;
    let mut recorder = Recorder::new();
    let db = Series::Dependency("db".into());
    for (t, step) in steps {
        match step {
            Step::Restart { kill } => {
                if !kill {
                    let batch = recorder.flush(*t, true);
                    store
                        .write(&Writes {
                            batch,
                            ..Writes::default()
                        })
                        .unwrap();
                }
                // What the killed process held is gone with it; the file is opened anew.
                recorder = Recorder::new();
                drop(store);
                store = SqliteStore::open(path, *t).unwrap().store;
            }
            Step::Level(l) => recorder.changed(&db, *t, *l, "m", vec![]),
            Step::Check { muted, us } => recorder.checked(&db, *t, false, *us, *muted),
            Step::Flush(aggregates) => {
                let batch = recorder.flush(*t, *aggregates);
                store
                    .write(&Writes {
                        batch,
                        ..Writes::default()
                    })
                    .unwrap();
            }
        }
    }
    let batch = recorder.flush(end, true);
    store
        .write(&Writes {
            batch,
            ..Writes::default()
        })
        .unwrap();
    store
}

fn retention() -> Retention {
    // Short, so that every tier is asked for within a few days of steps.
    Retention {
        minutes: Duration::from_secs(3 * 3600),
        hours: Duration::from_secs(2 * 86_400),
        ..Retention::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn uptime_equals_a_brute_force_replay(
        // Gaps of seconds (several runs in one minute) and of up to an hour.
        gaps in prop::collection::vec(
            (prop_oneof![0i64..20_000, 0i64..3_600_000], step()),
            1..120,
        ),
        windows in prop::collection::vec((0i64..4 * 86_400_000, 1i64..4 * 86_400_000), 1..8),
    ) {
        let mut t = T0;
        let steps: Vec<(i64, Step)> = gaps
            .into_iter()
            .map(|(gap, step)| {
                t += gap;
                (t, step)
            })
            .collect();
        let end = t + 1;
        let path = temp("replay");
        let store = run(&steps, end, &path);
        let now = Utc.timestamp_millis_opt(end).unwrap();
        let series = Series::Dependency("db".into());
        for (back, len) in windows {
            let from = Utc.timestamp_millis_opt(end - back).unwrap();
            let to = from + chrono::Duration::milliseconds(len);
            let Ok(window) = Window::new(from, to, now, &retention()) else {
                continue;
            };
            let buckets = store
                .buckets(&series, window.tier, window.from.timestamp(), window.to.timestamp())
                .unwrap();
            let report = UptimeReport::of(series.clone(), window, &buckets, Weights::DEFAULT);
            let want = replay(
                &steps,
                end,
                window.from.timestamp_millis(),
                window.to.timestamp_millis(),
            );
            let got = report.spent;
            prop_assert_eq!(
                [got.ok, got.minor, got.major, got.outage, got.muted],
                want,
                "window {:?} ({:?})",
                window,
                window.tier
            );
            let observed = want[..4].iter().sum::<u64>();
            if observed > 0 {
                let up = (observed - want[3]) as f64 / observed as f64;
                prop_assert!((report.uptime.unwrap() - up).abs() < 1e-12);
            } else {
                prop_assert_eq!(report.uptime, None);
            }
        }
    }
}

#[test]
fn each_tier_is_read_by_the_age_of_the_window() {
    let r = retention();
    let now = Utc.timestamp_millis_opt(T0).unwrap();
    let ago = |h: i64| now - chrono::Duration::hours(h);
    assert_eq!(
        Window::new(ago(2), now, now, &r).unwrap().tier,
        Tier::Minute
    );
    assert_eq!(Window::new(ago(30), now, now, &r).unwrap().tier, Tier::Hour);
    assert_eq!(
        Window::new(ago(24 * 10), now, now, &r).unwrap().tier,
        Tier::Day
    );
    assert!(Window::new(ago(24 * 500), now, now, &r).is_err());
    assert!(Window::new(now, ago(1), now, &r).is_err(), "reversed");
    assert!(
        Window::new(
            now + chrono::Duration::hours(1),
            now + chrono::Duration::hours(2),
            now,
            &r
        )
        .is_err(),
        "future"
    );
    // Widened to whole buckets.
    let w = Window::new(ago(30) + chrono::Duration::minutes(7), now, now, &r).unwrap();
    assert_eq!(w.from, Tier::Hour.floor(ago(30)));
}
