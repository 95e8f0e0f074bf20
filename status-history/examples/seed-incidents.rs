//! Writes `COUNT` incidents into the SQLite file at `PATH`, spread over the last 14 days and
//! resolved, each with an operator's update: what `scripts/bench-http`'s status page section
//! serves the page and `summary.json` with.
//!
//! ```sh
//! cargo run --release -p status-history --example seed-incidents -- PATH [COUNT]
//! ```

use std::collections::BTreeMap;

use status_core::CheckStatus;
use status_history::incident::{Impact, IncidentFact, NewUpdate, Phase, UpdateStatus};
use status_history::{SqliteStore, Writes};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: seed-incidents PATH [COUNT]")?;
    let count: i64 = args.next().map_or(Ok(50), |n| n.parse())?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut store = SqliteStore::open(std::path::Path::new(&path), now)?.store;
    let step = 14 * 86_400_000 / count.max(1);
    for i in 0..count {
        let started = now - (i + 1) * step;
        let root = format!("extra-{:05}", i + 1);
        // The quickstart's groups and public dependencies are among the affected, so that
        // every incident names a component.
        let affected: BTreeMap<String, CheckStatus> = [
            (root.clone(), CheckStatus::Outage),
            (
                ["primary-db", "search", "payments-api", "cache"][(i % 4) as usize].to_owned(),
                CheckStatus::Major,
            ),
        ]
        .into_iter()
        .collect();
        let fact = |at, phase| IncidentFact {
            roots: vec![root.clone()],
            affected: affected.clone(),
            impact: Impact::Major,
            started,
            at,
            phase,
        };
        for (at, phase) in [
            (started, Phase::Open),
            (
                started + 1_800_000,
                Phase::Resolved {
                    at: started + 1_500_000,
                },
            ),
        ] {
            store.write(&Writes {
                incidents: vec![fact(at, phase)],
                incident_quiet: 300_000,
                ..Writes::default()
            })?;
        }
        // The one just opened: the latest id.
        let id = store
            .incidents(started - 1, usize::MAX)?
            .iter()
            .map(|i| i.id)
            .max()
            .ok_or("no incident")?;
        store.post_update(&NewUpdate {
            incident: id,
            at: started + 600_000,
            status: UpdateStatus::Identified,
            message: format!("A bad deploy of {root}; rolled back."),
            actor: Some("oncall".into()),
        })?;
    }
    println!("{count} incidents written to {path}");
    Ok(())
}
