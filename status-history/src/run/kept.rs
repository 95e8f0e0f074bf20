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
