//! Every uptime answer held against a brute-force replay of what happened: the recorder,
//! the real SQLite store (a file, reopened at each restart) and its tiers, and the window
//! arithmetic together. Restarts are part of the schedule: a graceful one writes what its
//! run recorded, a kill loses what was recorded after its run's last durable write, and
//! every run's time adds to the others', whatever minute, hour or day they share.

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use status_history::objective::Windows;
use status_history::{Recorder, Series, SqliteStore, Tier, UptimeReport, Weights, Window, Writes};

use crate::schedule;

use crate::schedule::{replay, retention, Step, T0};

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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn uptime_equals_a_brute_force_replay(
        (steps, end) in schedule::steps(),
        windows in schedule::windows(),
    ) {
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every objective's bad and observed time, budget, burn rates and alerts, read from the
    /// store's tiers as `History::slo` reads them, equal a replay of what happened.
    #[test]
    fn objectives_equal_a_brute_force_replay(
        (steps, end) in schedule::steps(),
        objectives in schedule::objectives(),
    ) {
        let path = temp("objectives");
        let store = run(&steps, end, &path);
        let now = Utc.timestamp_millis_opt(end).unwrap();
        let series = Series::Dependency("db".into());
        for objective in &objectives {
            let windows = Windows::of(objective, now, &retention()).unwrap();
            let read: Vec<_> = windows
                .reads()
                .into_iter()
                .map(|(tier, from, to)| {
                    (tier, store.buckets(&series, tier, from.timestamp(), to.timestamp()).unwrap())
                })
                .collect();
            schedule::assert_objective_replays(objective, &steps, end, &windows, &read);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Windows excluded after the fact: in every tier and window read, what the series spent
    /// in each level inside them is muted time, exactly as a replay moves it.
    #[test]
    fn exclusions_move_their_time_to_muted_in_every_tier(
        (steps, end) in schedule::steps(),
        windows in schedule::windows(),
        excluded in schedule::windows(),
    ) {
        let path = temp("exclusions");
        let store = run(&steps, end, &path);
        let now = Utc.timestamp_millis_opt(end).unwrap();
        let series = Series::Dependency("db".into());
        let read = |tier: Tier, from: chrono::DateTime<Utc>, to: chrono::DateTime<Utc>| {
            store.buckets(&series, tier, from.timestamp(), to.timestamp()).unwrap()
        };
        let exclusions = schedule::exclusions(&series, end, &excluded, read);
        for (back, len) in windows {
            let from = Utc.timestamp_millis_opt(end - back).unwrap();
            let to = from + chrono::Duration::milliseconds(len);
            let Ok(window) = Window::new(from, to, now, &retention()) else {
                continue;
            };
            let mut buckets = read(window.tier, window.from, window.to);
            for e in &exclusions {
                e.apply(&series, window.tier, &mut buckets);
            }
            let got = UptimeReport::of(series.clone(), window, &buckets, Weights::DEFAULT).spent;
            let (a, z) = (window.from.timestamp_millis(), window.to.timestamp_millis());
            let want = schedule::replay_excluded(&steps, end, a, z, &exclusions);
            prop_assert_eq!(
                [got.ok, got.minor, got.major, got.outage, got.muted],
                want,
                "window {:?}, exclusions {:?}",
                window,
                exclusions.iter().map(|e| (e.from, e.to)).collect::<Vec<_>>()
            );
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
    assert!(Window::new(ago(24 * 500), now, now, &r)
        .unwrap_err()
        .is_invalid());
    assert!(
        Window::new(now, ago(1), now, &r).unwrap_err().is_invalid(),
        "reversed"
    );
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
