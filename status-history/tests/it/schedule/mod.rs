//! A schedule of what a dependency did, restarts of the process included, and its replay by
//! brute force: shared by the property tests of SQLite (`replay.rs`) and PostgreSQL.
#![allow(dead_code)] // Each test binary uses its part.

use std::time::Duration;

use proptest::prelude::*;
use status_core::CheckStatus;
use status_history::Retention;

/// 2026-03-01 00:00:00 UTC plus a little, in ms: not aligned to anything.
pub(crate) const T0: i64 = 1_772_323_200_000 + 17_345;

#[derive(Debug, Clone)]
pub(crate) enum Step {
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
pub(crate) fn replay(steps: &[(i64, Step)], end: i64, from: i64, to: i64) -> [u64; 5] {
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

/// Steps at times from [`T0`], gaps of seconds (several runs in one minute) and of up to an
/// hour, and where the schedule ends.
pub(crate) fn steps() -> impl Strategy<Value = (Vec<(i64, Step)>, i64)> {
    prop::collection::vec((prop_oneof![0i64..20_000, 0i64..3_600_000], step()), 1..120).prop_map(
        |gaps| {
            let mut t = T0;
            let steps: Vec<(i64, Step)> = gaps
                .into_iter()
                .map(|(gap, step)| {
                    t += gap;
                    (t, step)
                })
                .collect();
            (steps, t + 1)
        },
    )
}

/// Windows asked for: how far back from the end they start, and how long they are.
pub(crate) fn windows() -> impl Strategy<Value = Vec<(i64, i64)>> {
    prop::collection::vec((0i64..4 * 86_400_000, 1i64..4 * 86_400_000), 1..8)
}

pub(crate) fn retention() -> Retention {
    // Short, so that every tier is asked for within a few days of steps.
    Retention {
        minutes: Duration::from_secs(3 * 3600),
        hours: Duration::from_secs(2 * 86_400),
        ..Retention::default()
    }
}

/// Objectives asked for: a bad level and a window, on the schedule's dependency `db`.
pub(crate) fn objectives() -> impl Strategy<Value = Vec<status_history::objective::Objective>> {
    use status_history::objective::Objective;
    use status_history::Series;
    let one = (
        prop_oneof![Just(90.0), Just(99.0), Just(99.9)],
        prop_oneof![Just("1h"), Just("6h"), Just("1d"), Just("2d"), Just("30d")],
        prop_oneof![
            Just(CheckStatus::Minor),
            Just(CheckStatus::Major),
            Just(CheckStatus::Outage)
        ],
    )
        .prop_map(|(percent, window, bad)| {
            Objective::new(
                "db",
                Series::Dependency("db".into()),
                percent / 100.0,
                window,
            )
            .unwrap()
            .bad_from(bad)
            .unwrap()
        });
    prop::collection::vec(one, 1..4)
}

/// `objective`'s report at `end` from the buckets read per tier (`read`), held against a
/// brute-force replay of `steps` over each of its windows: bad and observed time, the budget
/// and each alert.
pub(crate) fn assert_objective_replays(
    objective: &status_history::objective::Objective,
    steps: &[(i64, Step)],
    end: i64,
    windows: &status_history::objective::Windows,
    read: &[(status_history::Tier, Vec<status_history::Bucket>)],
) {
    use status_history::objective::{SloReport, ALERT_RULES, BURN_WINDOWS};
    let now = chrono::TimeZone::timestamp_millis_opt(&chrono::Utc, end).unwrap();
    let (spent, burns) = windows.spent(|tier| {
        read.iter()
            .find(|(t, _)| *t == tier)
            .map_or(&[][..], |(_, b)| b.as_slice())
    });
    let report = SloReport::of(objective, now, &spent, &burns);
    let replayed = |w: &status_history::Window| {
        let r = replay(
            steps,
            end,
            w.from.timestamp_millis(),
            w.to.timestamp_millis(),
        );
        let bad: u64 = (1..4)
            .filter(|s| *s >= objective.bad_level().severity() as usize)
            .map(|s| r[s])
            .sum();
        (bad, r[..4].iter().sum::<u64>())
    };
    let (bad, observed) = replayed(&windows.window);
    assert_eq!(
        (report.bad_ms, report.observed_ms),
        (bad, observed),
        "{objective}"
    );
    assert_eq!(report.budget.spent_ms, bad);
    let mut by_window = std::collections::HashMap::new();
    for ((w, window), got) in BURN_WINDOWS.iter().zip(&windows.burns).zip(&report.burned) {
        let want = replayed(window);
        assert_eq!(
            (got.bad_ms, got.observed_ms),
            want,
            "{objective} over {}",
            w.name
        );
        by_window.insert(w.name, want);
    }
    for (rule, alert) in ALERT_RULES.iter().zip(&report.alerts) {
        let over = |name: &str| {
            let (bad, observed) = by_window[name];
            observed > 0
                && (bad as f64 / observed as f64) > rule.factor * (1.0 - objective.objective())
        };
        assert_eq!(
            alert.firing,
            over(rule.long) && over(rule.short),
            "{objective} {rule:?}"
        );
    }
}

/// Exclusions of `series` made at `end` over the windows `excluded` (back from the end, and
/// long), those that are one and overlap none before, from the buckets `read` answers.
pub(crate) fn exclusions(
    series: &status_history::Series,
    end: i64,
    excluded: &[(i64, i64)],
    read: impl Fn(
        status_history::Tier,
        chrono::DateTime<chrono::Utc>,
        chrono::DateTime<chrono::Utc>,
    ) -> Vec<status_history::Bucket>,
) -> Vec<status_history::exclusion::Exclusion> {
    use chrono::TimeZone;
    use status_history::exclusion::Exclusion;
    let at = |ms: i64| chrono::Utc.timestamp_millis_opt(ms).unwrap();
    let now = at(end);
    let mut out: Vec<Exclusion> = Vec::new();
    for (back, len) in excluded {
        let from = at(end - back);
        let to = (from + chrono::Duration::milliseconds(*len)).min(now);
        let Ok((from, to, tier)) = Exclusion::window(from, to, now, &retention()) else {
            continue;
        };
        if out.iter().any(|e| e.overlaps(series, from, to)) {
            continue;
        }
        let reads: Vec<_> = Exclusion::reads(from, to)
            .into_iter()
            .map(|(t, a, z)| (t, read(t, a, z)))
            .collect();
        let amounts = Exclusion::amounts(from, to, tier, |t| {
            reads
                .iter()
                .find(|(k, _)| *k == t)
                .map_or(&[][..], |(_, b)| b.as_slice())
        });
        out.push(Exclusion {
            id: 0,
            series: series.clone(),
            from,
            to,
            reason: "planned".into(),
            actor: None,
            created: now,
            amounts,
        });
    }
    out
}

/// [`replay`] from `from` to `to`, the time in each level inside `exclusions` moved to muted.
pub(crate) fn replay_excluded(
    steps: &[(i64, Step)],
    end: i64,
    from: i64,
    to: i64,
    exclusions: &[status_history::exclusion::Exclusion],
) -> [u64; 5] {
    let mut want = replay(steps, end, from, to);
    for e in exclusions {
        let (a, z) = (
            e.from.timestamp_millis().max(from),
            e.to.timestamp_millis().min(to),
        );
        if z > a {
            let x = replay(steps, end, a, z);
            for slot in 0..4 {
                want[slot] -= x[slot];
                want[4] += x[slot];
            }
        }
    }
    want
}
