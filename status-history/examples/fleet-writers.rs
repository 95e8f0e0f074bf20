//! Ten instances writing into one PostgreSQL at once, as a fleet does: each with 100
//! dependencies, each writing its open minute buckets (and a transition now and then) every
//! second, for a minute. How long a write takes, and what the database keeps.
//!
//! ```sh
//! cargo run --release -p status-history --features postgres --example fleet-writers -- URL [INSTANCES] [DEPS] [SECONDS]
//! ```
//! (`scripts/bench-history` starts a PostgreSQL and runs it.)

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use status_core::CheckStatus;
use status_history::{HistoryStore, PostgresHistory, Recorder, Series, Tier, Writes};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("a PostgreSQL URL");
    let instances: usize = args.next().map_or(10, |a| a.parse().expect("INSTANCES"));
    let deps: usize = args.next().map_or(100, |a| a.parse().expect("DEPS"));
    let seconds: i64 = args.next().map_or(60, |a| a.parse().expect("SECONDS"));
    let t0 = chrono::Utc::now().timestamp_millis();
    let began = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..instances {
        let store =
            PostgresHistory::new(&url, format!("instance-{i}"), format!("dc-{}", i % 2)).unwrap();
        tasks.push(tokio::spawn(async move {
            store.open(at(t0)).await.unwrap();
            let names: Vec<Series> = (0..deps)
                .map(|d| Series::Dependency(format!("dep-{d:03}")))
                .collect();
            let mut recorder = Recorder::new();
            for s in &names {
                recorder.changed(s, t0, CheckStatus::Ok, "", vec![]);
            }
            let mut took = Vec::new();
            let mut next = Instant::now();
            for second in 1..=seconds {
                let at = t0 + second * 1000;
                for (d, s) in names.iter().enumerate() {
                    recorder.checked(s, at, false, 1_500, false);
                    if (second as usize + d + i).is_multiple_of(97) {
                        let to = if second % 2 == 0 {
                            CheckStatus::Ok
                        } else {
                            CheckStatus::Minor
                        };
                        recorder.changed(s, at, to, "slow", vec![]);
                    }
                }
                let batch = recorder.flush(at, true);
                let asked = Instant::now();
                store
                    .write(&Writes {
                        batch,
                        ..Writes::default()
                    })
                    .await
                    .unwrap();
                took.push(asked.elapsed());
                next += Duration::from_secs(1);
                tokio::time::sleep_until(next.into()).await;
            }
            (store, took)
        }));
    }
    let mut all = Vec::new();
    let mut first = None;
    for t in tasks {
        let (store, took) = t.await.unwrap();
        all.extend(took);
        first.get_or_insert(store);
    }
    all.sort();
    let store = first.unwrap();
    let series = Series::Dependency("dep-000".into());
    let minutes = store
        .buckets(
            &series,
            Tier::Minute,
            DateTime::UNIX_EPOCH,
            DateTime::<Utc>::MAX_UTC,
        )
        .await
        .unwrap();
    let observed: u64 = minutes.iter().map(|b| b.spent.ok + b.spent.minor).sum();
    println!("## PostgreSQL: {instances} instances of {deps} dependencies writing at once, {seconds} s\n");
    println!("| what | value |\n|---|---|");
    println!(
        "| writes | {} ({:.0} rows a second in all) |",
        all.len(),
        (instances * deps * 3) as f64
    );
    println!(
        "| a write (one transaction: {deps} minute rows, their hours and days) | p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms |",
        all[all.len() / 2].as_secs_f64() * 1e3,
        all[all.len() * 99 / 100].as_secs_f64() * 1e3,
        all[all.len() - 1].as_secs_f64() * 1e3
    );
    println!(
        "| dep-000's observed time, merged over the fleet | {:.0} s (= {instances} × {seconds} s) |",
        observed as f64 / 1000.0
    );
    println!("| wall time | {:.1} s |", began.elapsed().as_secs_f64());
}

/// `ms` milliseconds since the Unix epoch as a time.
fn at(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap()
}
