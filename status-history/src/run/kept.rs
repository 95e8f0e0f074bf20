//! What operators set, kept: mutes and overrides put back at start and snapshotted when
//! they change; the holds taken and released, audited.

use status_core::{HoldSource, Registry, RotationHold};

use super::Restored;
use crate::model::{AuditRecord, MuteRecord, OverrideRecord};
use crate::store::HistoryStore;

/// Puts back the mutes and overrides the last run left in force, each with its own times,
/// recording nothing new (no flip, no audit record). What an operator muted, unmuted,
/// overrode or cleared in this run before the store opened is left as they made it.
pub(super) async fn restore(store: &dyn HistoryStore, registry: &Registry) -> Restored {
    let mut restored = Restored::default();
    let mutes = store.mutes().await.unwrap_or_default();
    let overrides = store.overrides().await.unwrap_or_default();
    let changed = "changed in this run before the store opened";
    // What has ended since is not put back, and is no news.
    let now = registry.clock().wall();
    for m in mutes.into_iter().filter(|m| m.until > now) {
        match registry.restore_mute(
            &m.dependency,
            &m.reason,
            m.actor.as_deref(),
            m.set_at,
            m.start,
            m.until,
        ) {
            Ok(Some(_)) => restored.mutes += 1,
            Ok(None) => restored
                .skipped
                .push(format!("the mute of {}: {changed}", m.dependency)),
            Err(e) => restored
                .skipped
                .push(format!("the mute of {}: {e}", m.dependency)),
        }
    }
    for o in overrides.into_iter().filter(|o| o.expires_at > now) {
        match registry.restore_override(
            &o.feature,
            o.enabled,
            &o.reason,
            o.actor.as_deref(),
            o.set_at,
            o.expires_at,
        ) {
            Ok(Some(_)) => restored.overrides += 1,
            Ok(None) => restored
                .skipped
                .push(format!("the override of {}: {changed}", o.feature)),
            Err(e) => restored
                .skipped
                .push(format!("the override of {}: {e}", o.feature)),
        }
    }
    for skipped in &restored.skipped {
        tracing::warn!("not restored from the history: {skipped}");
    }
    if restored.mutes + restored.overrides > 0 {
        tracing::info!(
            mutes = restored.mutes,
            overrides = restored.overrides,
            "restored from the history"
        );
    }
    restored
}

/// The audit records of the holds taken and released since `previous`, at `now` (ms), and
/// the holds as they stand. A hold released by someone is said so by `released` (whose hold,
/// who); one released by no one ran out, and is the application's (`code`).
pub(super) fn hold_changes(
    previous: &[(HoldSource, String)],
    holds: &[RotationHold],
    now: i64,
    released: &[(HoldSource, Option<String>)],
) -> (Vec<AuditRecord>, Vec<(HoldSource, String)>) {
    let current: Vec<(HoldSource, String)> =
        holds.iter().map(|h| (h.source, h.reason.clone())).collect();
    let record =
        |actor: Option<String>, source: HoldSource, reason: &str, outcome: &str| AuditRecord {
            at: crate::model::millis(now),
            actor: Some(actor.unwrap_or_else(|| "code".into())),
            action: "hold".into(),
            target: source.as_str().into(),
            reason: Some(reason.to_owned()),
            address: None,
            outcome: outcome.into(),
        };
    let mut records = Vec::new();
    for hold in holds {
        if !previous
            .iter()
            .any(|(s, r)| *s == hold.source && *r == hold.reason)
        {
            records.push(record(
                hold.actor.clone(),
                hold.source,
                &hold.reason,
                "taken",
            ));
        }
    }
    for (source, reason) in previous {
        if !current.iter().any(|(s, _)| s == source) {
            let by = released
                .iter()
                .rev()
                .find(|(s, _)| s == source)
                .map(|(_, actor)| actor.clone().unwrap_or_else(|| "operator".into()));
            records.push(record(by, *source, reason, "released"));
        }
    }
    (records, current)
}

/// Every mute kept, as stored.
pub(super) fn mutes(registry: &Registry) -> Vec<MuteRecord> {
    registry
        .mutes()
        .into_iter()
        .map(|m| MuteRecord {
            dependency: m.dependency.as_str().to_owned(),
            reason: m.reason,
            actor: m.actor,
            set_at: m.set_at,
            start: m.start,
            until: m.until,
        })
        .collect()
}

/// Every override in force, as stored.
pub(super) fn overrides(registry: &Registry) -> Vec<OverrideRecord> {
    registry
        .features()
        .into_iter()
        .filter_map(|f| {
            let o = f.override_?;
            Some(OverrideRecord {
                feature: f.name.as_str().to_owned(),
                enabled: o.enabled,
                reason: o.reason,
                actor: o.actor,
                set_at: o.set_at,
                expires_at: o.expires_at,
            })
        })
        .collect()
}

/// What an instance does so that the acts of a fleet sharing its store hold on it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Act {
    /// Take another instance's mute: newer than this instance's of its dependency, if any.
    Take(MuteRecord),
    /// End this instance's mute: some instance ended it.
    End(MuteRecord),
}

/// A mute's identity across a fleet: its dependency, and when it was set (to the
/// millisecond, as stores keep it).
fn identity(m: &MuteRecord) -> (&str, i64) {
    (m.dependency.as_str(), m.set_at.timestamp_millis())
}

/// The acts that bring this instance's mutes (`own`) in line with its peers' (`peers`) and
/// the mutes ended anywhere (`ends`), at `now`: its own mutes ended elsewhere end, and of
/// each dependency's mutes the newest set wins, unless ended or over.
pub(super) fn shared_acts(
    own: &[MuteRecord],
    peers: &[MuteRecord],
    ends: &[MuteRecord],
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<Act> {
    let ended: std::collections::HashSet<(&str, i64)> = ends.iter().map(identity).collect();
    let mut acts: Vec<Act> = own
        .iter()
        .filter(|m| ended.contains(&identity(m)))
        .cloned()
        .map(Act::End)
        .collect();
    let live = |m: &&MuteRecord| m.until > now && !ended.contains(&identity(m));
    let mut newest: std::collections::BTreeMap<&str, &MuteRecord> = Default::default();
    for m in peers.iter().filter(live) {
        let slot = newest.entry(m.dependency.as_str()).or_insert(m);
        if identity(m).1 > identity(slot).1 {
            *slot = m;
        }
    }
    for (dependency, theirs) in newest {
        let mine = own.iter().filter(live).find(|m| m.dependency == dependency);
        if mine.is_none_or(|m| identity(m).1 < identity(theirs).1) {
            acts.push(Act::Take(theirs.clone()));
        }
    }
    acts
}

/// The mutes of `before` gone from `after` before their window's end (unmuted, replaced,
/// a maintenance called off), at `now`.
pub(super) fn ended_early(
    before: &[MuteRecord],
    after: &[MuteRecord],
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<MuteRecord> {
    before
        .iter()
        .filter(|m| m.until > now && !after.iter().any(|a| identity(a) == identity(m)))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Duration, Utc};

    use super::{ended_early, shared_acts, Act};
    use crate::model::MuteRecord;

    fn mute(dependency: &str, set_at: i64, until: i64) -> MuteRecord {
        let at = |s: i64| DateTime::<Utc>::from_timestamp(s, 0).unwrap();
        MuteRecord {
            dependency: dependency.into(),
            reason: format!("set at {set_at}"),
            actor: None,
            set_at: at(set_at),
            start: at(set_at),
            until: at(until),
        }
    }

    #[test]
    fn the_newest_mute_of_a_dependency_wins_and_one_ended_anywhere_ends_everywhere() {
        let now = DateTime::<Utc>::from_timestamp(1_000, 0).unwrap();
        // A peer's mute of db, newer than ours: taken. Of cache, older: ours stays.
        let own = [mute("db", 900, 2_000), mute("cache", 950, 2_000)];
        let peers = [
            mute("db", 960, 3_000),
            mute("db", 930, 3_000),
            mute("cache", 940, 2_000),
            mute("queue", 990, 1_500),
            mute("old", 100, 999),
        ];
        let acts = shared_acts(&own, &peers, &[], now);
        assert_eq!(
            acts,
            [Act::Take(peers[0].clone()), Act::Take(peers[3].clone())],
            "the newest of db, queue; not cache (ours is newer), not old (over)"
        );
        // The same mute held everywhere: nothing to do.
        assert!(shared_acts(&own, &own, &[], now).is_empty());
        // Ours ended elsewhere: it ends here, and a copy another still holds is not taken.
        let ends = [mute("db", 900, 2_000)];
        let acts = shared_acts(&own, &[mute("db", 900, 2_000)], &ends, now);
        assert_eq!(acts, [Act::End(own[0].clone())]);
        // Ended, and a newer one elsewhere: ends, then takes the newer.
        let acts = shared_acts(&own[..1], &[mute("db", 960, 3_000)], &ends, now);
        assert_eq!(
            acts,
            [Act::End(own[0].clone()), Act::Take(mute("db", 960, 3_000))]
        );
    }

    #[test]
    fn a_mute_gone_before_its_end_ended_early_and_one_run_out_did_not() {
        let now = DateTime::<Utc>::from_timestamp(1_000, 0).unwrap();
        let before = [
            mute("db", 900, 2_000),
            mute("cache", 900, 1_000),
            mute("queue", 900, 2_000),
        ];
        let replaced = mute("queue", 990, 2_500);
        let after = [replaced.clone()];
        let ended = ended_early(&before, &after, now);
        assert_eq!(ended, [before[0].clone(), before[2].clone()]);
        assert!(ended_early(&before, &before, now + Duration::seconds(1)).is_empty());
    }
}
