//! What a fleet's store hands back is not trusted: any bytes read as a summary give at most
//! 32 valid, distinct failing dependencies; any counts, once sanitized, excuse nobody beyond
//! the fresh instances, and sanitizing again changes nothing.

use status_core::CheckStatus;
use status_fleet::{
    counted_failing, Conditions, DatacenterCounts, DependencyCount, InstanceSummary, MAX_FAILING,
    MAX_FAILING_ROWS,
};

const LEVELS: [CheckStatus; 4] = [
    CheckStatus::Ok,
    CheckStatus::Minor,
    CheckStatus::Major,
    CheckStatus::Outage,
];

/// A record's bytes, the data center's fresh instances, and rows of what fails: dependency,
/// level (0 to 3) and instances.
pub type FleetRecordInput<'a> = (&'a [u8], u8, Vec<(String, u8, u16)>);

/// One input (see the module).
pub fn fleet_record(input: FleetRecordInput<'_>) {
    let (record, fresh, rows) = input;
    if let Ok(summary) = serde_json::from_slice::<InstanceSummary>(record) {
        let (kept, dropped) = counted_failing(&summary.failing);
        assert!(kept.len() <= MAX_FAILING);
        assert!(kept.iter().all(status_fleet::FailingDependency::valid));
        for (i, a) in kept.iter().enumerate() {
            assert!(kept[i + 1..].iter().all(|b| b.id != a.id), "{} twice", a.id);
        }
        if !dropped {
            assert_eq!(kept.len(), summary.failing.len());
        }
    }
    let fresh = usize::from(fresh);
    let mut counts = DatacenterCounts::new(
        "dc",
        Conditions {
            ok: fresh,
            ..Conditions::default()
        },
        fresh,
    );
    counts.failing = rows
        .into_iter()
        .map(|(dependency, level, instances)| DependencyCount {
            dependency,
            level: LEVELS[usize::from(level % 4)],
            instances: usize::from(instances),
        })
        .collect();
    let before = counts.failing.len() as u64;
    let dropped = counts.sanitize();
    assert_eq!(before - dropped, counts.failing.len() as u64);
    assert!(counts.failing.len() <= MAX_FAILING_ROWS);
    for row in &counts.failing {
        assert!(row.instances >= 1 && row.level != CheckStatus::Ok);
        let over_levels: usize = counts
            .failing
            .iter()
            .filter(|r| r.dependency == row.dependency)
            .map(|r| r.instances)
            .sum();
        assert!(
            over_levels <= fresh,
            "{} on {over_levels} of {fresh}",
            row.dependency
        );
    }
    assert_eq!(
        counts.clone().sanitize(),
        0,
        "sanitizing twice changes nothing"
    );
}
