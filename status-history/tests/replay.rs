//! Every uptime answer held against a brute-force replay of what happened: the recorder,
//! the real SQLite store (in memory) and its roll-ups, and the window arithmetic together.

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
    ]
}

/// What happened, replayed by brute force: ms in each level (unmuted) and muted, between
/// `from` and `to`, from the steps alone.
fn replay(steps: &[(i64, Step)], end: i64, from: i64, to: i64) -> [u64; 5] {
    let mut out = [0u64; 5];
    let mut state: Option<(CheckStatus, bool)> = None;
    let mut muted = false;
    let mut at = i64::MIN;
    let account = |state: Option<(CheckStatus, bool)>, a: i64, b: i64, out: &mut [u64; 5]| {
        if let Some((level, muted)) = state {
            let (a, b) = (a.max(from), b.min(to));
            if b > a {
                let slot = if muted { 4 } else { level.severity() as usize };
                out[slot] += (b - a) as u64;
            }
        }
    };
    for (t, step) in steps {
        let t = (*t).max(at);
        account(state, at, t, &mut out);
        at = t;
        match step {
            Step::Level(l) => state = Some((*l, muted)),
            Step::Check { muted: m, .. } => {
                muted = *m;
                state = state.map(|(l, _)| (l, muted));
            }
            Step::Flush(_) => {}
        }
    }
    account(state, at, end, &mut out);
    out
}

fn run(steps: &[(i64, Step)], end: i64) -> SqliteStore {
    let mut store = SqliteStore::in_memory(T0).unwrap();
    let mut recorder = Recorder::new();
    let db = Series::Dependency("db".into());
    for (t, step) in steps {
        match step {
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
        gaps in prop::collection::vec((0i64..3_600_000, step()), 1..120),
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
        let store = run(&steps, end);
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
