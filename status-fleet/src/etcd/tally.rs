//! The count-by-event and the reading of an entry, pure: what the watch and the full read do
//! with each key, tested without etcd.

use crate::Rejection;
use std::collections::BTreeMap;

use status_core::CheckStatus;

use crate::{Conditions, DatacenterCounts, DependencyCount, InstanceSummary, MAX_SUMMARY};

/// The counts by data center: each one's fresh instances by condition, its serving ones, and
/// its instances by failing dependency and level.
pub(super) type Counts = BTreeMap<String, Tally>;

/// One data center's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Tally {
    conditions: Conditions,
    serving: usize,
    failing: BTreeMap<(String, CheckStatus), usize>,
}

/// The counts as the fleet reads them.
pub(super) fn counted(counts: &Counts) -> Vec<DatacenterCounts> {
    counts
        .iter()
        .map(|(name, tally)| {
            let mut dc = DatacenterCounts::new(name.clone(), tally.conditions, tally.serving);
            dc.failing = tally
                .failing
                .iter()
                .map(|((dependency, level), instances)| DependencyCount {
                    dependency: dependency.clone(),
                    level: *level,
                    instances: *instances,
                })
                .collect();
            dc
        })
        .collect()
}

/// Moves `counts` by the instance at `key` (after the prefix's `i/`) holding `value`: `by`
/// +1 when it arrives, -1 when it goes. Pure: what the watch does with each event, tested
/// without etcd. `Ok(false)` when the counts would go below zero (they are not this store's
/// counts); `Err(reason)` for an entry no instance could have written, arriving (it is
/// skipped; one going is skipped silently, as it was when it came). Its failing
/// dependencies count as [`counted_failing`](crate::counted_failing) keeps them; `bad` is set
/// when it dropped some.
pub(super) fn tally(
    counts: &mut Counts,
    key: &[u8],
    value: &[u8],
    by: i8,
    bad: &mut bool,
) -> Result<bool, Rejection> {
    let summary = match entry(key, value) {
        Ok(summary) => summary,
        Err(reason) if by > 0 => return Err(reason),
        Err(_) => return Ok(true),
    };
    let serving = summary.serving();
    let (failing, dropped) = crate::counted_failing(&summary.failing);
    *bad = dropped;
    let tally = counts.entry(summary.datacenter.clone()).or_default();
    if by > 0 {
        tally.conditions.add(summary.condition);
        tally.serving += usize::from(serving);
        for f in failing {
            *tally.failing.entry((f.id, f.level)).or_insert(0) += 1;
        }
        return Ok(true);
    }
    for f in failing {
        let key = (f.id, f.level);
        match tally.failing.get_mut(&key) {
            Some(1) => {
                tally.failing.remove(&key);
            }
            Some(n) => *n -= 1,
            None => return Ok(false),
        }
    }
    let Tally {
        conditions,
        serving: live,
        ..
    } = tally;
    let slot = match summary.condition {
        CheckStatus::Ok => &mut conditions.ok,
        CheckStatus::Minor => &mut conditions.minor,
        CheckStatus::Major => &mut conditions.major,
        CheckStatus::Outage => &mut conditions.outage,
    };
    let Some(left) = slot.checked_sub(1) else {
        return Ok(false);
    };
    *slot = left;
    if serving {
        let Some(left) = live.checked_sub(1) else {
            return Ok(false);
        };
        *live = left;
    }
    if conditions.total() == 0 && tally.failing.is_empty() {
        counts.remove(&summary.datacenter);
    }
    Ok(true)
}

/// An instance from its key (after `{prefix}i/`: `dc \0 id`) and value; the reason when no
/// instance could have written it. The id and data center come from the key.
pub(super) fn entry(key: &[u8], value: &[u8]) -> Result<InstanceSummary, Rejection> {
    let at = key.iter().position(|b| *b == 0).ok_or(Rejection::BadId)?;
    let datacenter = std::str::from_utf8(&key[..at]).map_err(|_| Rejection::BadDatacenter)?;
    let id = std::str::from_utf8(&key[at + 1..]).map_err(|_| Rejection::BadId)?;
    if let Some(reason) = crate::store::refusal(id, datacenter) {
        return Err(reason);
    }
    if value.len() > MAX_SUMMARY {
        return Err(Rejection::TooLarge);
    }
    let mut summary: InstanceSummary =
        serde_json::from_slice(value).map_err(|_| Rejection::BadState)?;
    id.clone_into(&mut summary.instance_id);
    datacenter.clone_into(&mut summary.datacenter);
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{hex, unhex};

    #[test]
    fn tallying_events_equals_a_recount() {
        use std::collections::BTreeMap as Map;

        let summary = |id: &str, dc: &str, condition: &str, holds: bool, failing: &str| {
            let holds = if holds { r#"["operator"]"# } else { "[]" };
            (
                format!("{dc}\0{id}").into_bytes(),
                format!(
                    r#"{{"instanceId":"{id}","datacenter":"{dc}","condition":"{condition}","holds":{holds},"version":"1","failing":{failing}}}"#
                )
                .into_bytes(),
            )
        };
        // Failing dependencies, the last with a duplicate and garbage (counted once, said).
        let failings = [
            "[]",
            r#"[{"id":"db","level":"OUTAGE"}]"#,
            r#"[{"id":"db","level":"MAJOR"},{"id":"cache","level":"MINOR"}]"#,
            r#"[{"id":"cache","level":"OUTAGE"},{"id":"cache","level":"MINOR"},{"id":"Bad Id","level":"OUTAGE"}]"#,
        ];
        let mut bad = false;
        // A deterministic walk of puts, changes and deletes, each applied as the watch
        // applies an event (the previous value out, the new one in), checked after every
        // step against a recount of what the store holds.
        let conditions = ["OK", "MINOR", "MAJOR", "OUTAGE"];
        let mut store: Map<Vec<u8>, Vec<u8>> = Map::new();
        let mut counts = Counts::new();
        let mut seed = 7u64;
        for step in 0..2_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pick = (seed >> 33) as usize;
            let (key, value) = summary(
                &format!("i{}", pick % 7),
                &format!("dc{}", (pick / 7) % 3),
                conditions[(pick / 21) % 4],
                (pick / 84).is_multiple_of(2),
                failings[(pick / 672) % 4],
            );
            // The same id in another data center is another key: fine, as etcd keys them.
            if (pick / 168).is_multiple_of(4) {
                if let Some(previous) = store.remove(&key) {
                    assert_eq!(tally(&mut counts, &key, &previous, -1, &mut bad), Ok(true));
                }
            } else {
                if let Some(previous) = store.insert(key.clone(), value.clone()) {
                    assert_eq!(tally(&mut counts, &key, &previous, -1, &mut bad), Ok(true));
                }
                assert_eq!(tally(&mut counts, &key, &value, 1, &mut bad), Ok(true));
            }
            let mut recount = Counts::new();
            for (key, value) in &store {
                assert_eq!(tally(&mut recount, key, value, 1, &mut bad), Ok(true));
            }
            assert_eq!(counts, recount, "step {step}");
        }
        // Garbage arriving has a reason and changes nothing; going, it is silent.
        let before = counts.clone();
        assert_eq!(
            tally(&mut counts, b"east\0x", b"{", 1, &mut bad),
            Err(Rejection::BadState)
        );
        assert_eq!(tally(&mut counts, b"east\0x", b"{", -1, &mut bad), Ok(true));
        assert_eq!(counts, before);
        // A delete the counts never saw: not this store's counts.
        let (key, value) = summary("ghost", "dc9", "OK", false, "[]");
        assert_eq!(tally(&mut counts, &key, &value, -1, &mut bad), Ok(false));
        // A summary with a duplicate and a bad id: what is valid counts once, and it is said.
        let (key, value) = summary("x1", "dc8", "OUTAGE", false, failings[3]);
        assert_eq!(tally(&mut counts, &key, &value, 1, &mut bad), Ok(true));
        assert!(bad);
        let dc8 = counted(&counts)
            .into_iter()
            .find(|c| c.datacenter == "dc8")
            .unwrap();
        assert_eq!(
            dc8.failing,
            [DependencyCount {
                dependency: "cache".into(),
                level: CheckStatus::Outage,
                instances: 1
            }]
        );
    }

    #[test]
    fn an_instance_is_named_by_its_key_and_garbage_has_a_reason() {
        let value = br#"{"instanceId":"impostor","datacenter":"west","condition":"OUTAGE","holds":[],"version":"1"}"#;
        let summary = entry(b"east\0a1", value).unwrap();
        assert_eq!(
            (summary.instance_id.as_str(), summary.datacenter.as_str()),
            ("a1", "east")
        );
        assert_eq!(summary.condition, CheckStatus::Outage);
        assert_eq!(entry(b"east", value).unwrap_err(), Rejection::BadId);
        assert_eq!(entry(b"\0a1", value).unwrap_err(), Rejection::BadDatacenter);
        assert_eq!(entry(b"east\0", value).unwrap_err(), Rejection::BadId);
        assert_eq!(entry(b"east\0a1", b"{").unwrap_err(), Rejection::BadState);
        assert_eq!(
            entry(b"east\0a1", &vec![b' '; MAX_SUMMARY + 1]).unwrap_err(),
            Rejection::TooLarge
        );
        assert_eq!(unhex(&hex(b"east\0a1")).unwrap(), b"east\0a1");
        assert_eq!(unhex("0g"), None);
    }
}
