//! [`merge`]: how a store folds a tracker's fact into the incidents it keeps. Pure, so that
//! SQLite and PostgreSQL merge alike: each reads the candidates, merges, and writes back in
//! one transaction.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use status_core::CheckStatus;

use super::{Impact, IncidentFact, Phase, UpdateKind, UpdateStatus};

/// How long an instance that joined an incident may say nothing of it (a tracker says an
/// open incident again every minute) before it is not waited for: 5 minutes. An instance that
/// died, or was scaled away, then cannot hold a fleet's incident open.
pub const GONE_AFTER: std::time::Duration = std::time::Duration::from_secs(300);

/// [`GONE_AFTER`] in the milliseconds the merge counts in.
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)] // 300,000
const GONE_AFTER_MS: i64 = GONE_AFTER.as_millis() as i64;

/// One instance that joined an incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberState {
    /// When it saw the incident resolve (ms); `None` while it fails.
    pub clear: Option<i64>,
    /// When it last said anything of the incident (ms).
    pub seen: i64,
}

impl MemberState {
    /// Whether it no longer holds the incident open at `now`: it saw it resolve, or has not
    /// been heard from for [`GONE_AFTER`].
    fn done(&self, now: i64) -> bool {
        self.clear.is_some() || now - self.seen >= GONE_AFTER_MS
    }
}

/// An incident as a store keeps it, with the instances that joined it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIncident {
    /// Its id (0 for one not yet inserted).
    pub id: i64,
    /// Its title.
    pub title: String,
    /// Its root causes, sorted.
    pub roots: Vec<String>,
    /// What it covered, with the worst level of each.
    pub affected: BTreeMap<String, CheckStatus>,
    /// Its worst impact.
    pub impact: Impact,
    /// When it started (ms).
    pub started: i64,
    /// When it resolved, if it did.
    pub resolved: Option<i64>,
    /// When it last changed (ms).
    pub updated: i64,
    /// Each instance that joined it.
    pub members: BTreeMap<String, MemberState>,
}

/// What a merge asks the store to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Insert this incident (its id is the store's to give), with the engine's first update.
    Insert(StoredIncident, UpdateStatus, String),
    /// Replace the incident of this id, adding the engine's update if there is one.
    Update(StoredIncident, Option<(UpdateStatus, UpdateKind, String)>),
    /// Nothing: a resolution of an incident no longer kept open.
    Nothing,
}

/// Folds `fact`, said by `instance`, into the incidents `candidates` (those open, or
/// resolved and last changed less than `reopen_within` ms before the fact): it joins the
/// oldest sharing a root cause, or opens one. An incident resolves when every instance that
/// joined it has seen it resolve, dated by the last of them to recover; a failure said
/// within `reopen_within` of its resolution being said reopens it.
#[must_use]
pub fn merge(
    candidates: &[StoredIncident],
    fact: &IncidentFact,
    instance: &str,
    reopen_within: i64,
) -> Merged {
    let found = candidates
        .iter()
        .filter(|c| c.resolved.is_none() || fact.at - c.updated < reopen_within)
        .filter(|c| c.roots.iter().any(|r| fact.roots.contains(r)))
        .min_by_key(|c| (c.started, c.id));
    let Some(found) = found else {
        if let Phase::Resolved { .. } = fact.phase {
            return Merged::Nothing;
        }
        let incident = StoredIncident {
            id: 0,
            title: fact.title(),
            roots: fact.roots.clone(),
            affected: fact.affected.clone(),
            impact: fact.impact,
            started: fact.started,
            resolved: None,
            updated: fact.at,
            members: BTreeMap::from([(
                instance.to_owned(),
                MemberState {
                    clear: None,
                    seen: fact.at,
                },
            )]),
        };
        let message = opened_message(&incident);
        return Merged::Insert(incident, UpdateStatus::Investigating, message);
    };
    let mut next = found.clone();
    for root in &fact.roots {
        if !next.roots.contains(root) {
            next.roots.push(root.clone());
        }
    }
    next.roots.sort();
    for (id, level) in &fact.affected {
        let worst = next.affected.entry(id.clone()).or_insert(*level);
        *worst = (*worst).max(*level);
    }
    next.impact = next.impact.max(fact.impact);
    next.started = next.started.min(fact.started);
    let was_resolved = next.resolved.is_some();
    let update = match fact.phase {
        Phase::Open => {
            next.members.insert(
                instance.to_owned(),
                MemberState {
                    clear: None,
                    seen: fact.at,
                },
            );
            next.resolved = None;
            was_resolved.then(|| {
                (
                    UpdateStatus::Investigating,
                    UpdateKind::Reopened,
                    "It failed again within the quiet time: reopened.".to_owned(),
                )
            })
        }
        Phase::Resolved { at } => {
            next.members.insert(
                instance.to_owned(),
                MemberState {
                    clear: Some(at),
                    seen: fact.at,
                },
            );
            if was_resolved {
                None
            } else {
                settle(&mut next, fact.at)
            }
        }
    };
    if next == *found && update.is_none() {
        return Merged::Nothing;
    }
    // Only what is shown dates a change: an instance saying an incident again does not.
    if update.is_some() || !same_but_seen(&next, found) {
        next.updated = fact.at;
    }
    next.title = IncidentFact {
        roots: next.roots.clone(),
        affected: next.affected.clone(),
        impact: next.impact,
        started: next.started,
        at: fact.at,
        phase: fact.phase,
    }
    .title();
    Merged::Update(next, update)
}

/// Whether `a` and `b` differ only in when their members were last heard.
fn same_but_seen(a: &StoredIncident, b: &StoredIncident) -> bool {
    let clears = |i: &StoredIncident| -> Vec<(String, Option<i64>)> {
        i.members
            .iter()
            .map(|(k, m)| (k.clone(), m.clear))
            .collect()
    };
    StoredIncident {
        members: BTreeMap::new(),
        ..a.clone()
    } == StoredIncident {
        members: BTreeMap::new(),
        ..b.clone()
    } && clears(a) == clears(b)
}

/// Resolves `incident` at `now` if no member holds it open any more: dated by the last to
/// recover (or, when none said it recovered, the last heard from); answers the engine's word.
fn settle(incident: &mut StoredIncident, now: i64) -> Option<(UpdateStatus, UpdateKind, String)> {
    if incident.resolved.is_some() || !incident.members.values().all(|m| m.done(now)) {
        return None;
    }
    let recovered = incident.members.values().filter_map(|m| m.clear).max();
    incident.resolved = Some(recovered.unwrap_or_else(|| {
        incident
            .members
            .values()
            .map(|m| m.seen)
            .max()
            .unwrap_or(now)
    }));
    let silent = incident.members.values().any(|m| m.clear.is_none());
    let message = match (recovered, silent) {
        (Some(_), false) => "Everything it covers has been healthy for the quiet time.",
        (Some(_), true) => {
            "Everything it covers has been healthy for the quiet time (instances not heard \
             from for 5 minutes were not waited for)."
        }
        (None, _) => "No instance that saw it has been heard from for 5 minutes: closed.",
    };
    Some((
        UpdateStatus::Resolved,
        UpdateKind::Resolved,
        message.to_owned(),
    ))
}

/// Resolves `incident` at `now` if every instance that joined it has seen it resolve or gone
/// silent (see [`GONE_AFTER`]): what a store asks of its open incidents at each write, so
/// that the last living instance need not be the one to say it.
#[must_use]
pub fn sweep(
    incident: &StoredIncident,
    now: i64,
) -> Option<(StoredIncident, UpdateStatus, String)> {
    let mut next = incident.clone();
    let (status, _, message) = settle(&mut next, now)?;
    next.updated = now;
    Some((next, status, message))
}

fn opened_message(incident: &StoredIncident) -> String {
    let others: Vec<&str> = incident
        .affected
        .keys()
        .filter(|id| !incident.roots.contains(id))
        .map(String::as_str)
        .collect();
    if others.is_empty() {
        format!("{} fails.", incident.roots.join(", "))
    } else {
        format!(
            "{} fails; it affects {}.",
            incident.roots.join(", "),
            others.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(roots: &[&str], at: i64, phase: Phase) -> IncidentFact {
        IncidentFact {
            roots: roots.iter().map(|s| (*s).to_owned()).collect(),
            affected: roots
                .iter()
                .map(|s| ((*s).to_owned(), CheckStatus::Outage))
                .collect(),
            impact: Impact::Critical,
            started: at,
            at,
            phase,
        }
    }

    fn stored(merged: Merged, id: i64) -> StoredIncident {
        match merged {
            Merged::Insert(mut i, ..) => {
                i.id = id;
                i
            }
            Merged::Update(i, _) => i,
            Merged::Nothing => panic!("nothing merged"),
        }
    }

    #[test]
    fn two_instances_failing_for_one_root_share_one_incident_until_both_recover() {
        let a = stored(
            merge(&[], &fact(&["db"], 1_000, Phase::Open), "a", 300_000),
            7,
        );
        let joined = stored(
            merge(
                std::slice::from_ref(&a),
                &fact(&["db"], 2_000, Phase::Open),
                "b",
                300_000,
            ),
            7,
        );
        assert_eq!(joined.id, 7);
        assert_eq!(joined.members.len(), 2);
        assert_eq!(joined.started, 1_000);

        let a_clear = stored(
            merge(
                &[joined],
                &fact(&["db"], 250_000, Phase::Resolved { at: 100_000 }),
                "a",
                300_000,
            ),
            7,
        );
        assert_eq!(a_clear.resolved, None, "b still fails");
        let Merged::Update(both, Some((UpdateStatus::Resolved, UpdateKind::Resolved, _))) = merge(
            &[a_clear],
            &fact(&["db"], 290_000, Phase::Resolved { at: 200_000 }),
            "b",
            300_000,
        ) else {
            panic!("resolved with an update");
        };
        assert_eq!(both.resolved, Some(200_000), "dated by the last to recover");

        let Merged::Update(reopened, Some((UpdateStatus::Investigating, UpdateKind::Reopened, _))) =
            merge(
                std::slice::from_ref(&both),
                &fact(&["db"], 500_000, Phase::Open),
                "a",
                300_000,
            )
        else {
            panic!("reopened within the quiet time");
        };
        assert_eq!(reopened.resolved, None);
        assert!(
            matches!(
                merge(&[both], &fact(&["db"], 900_000, Phase::Open), "a", 300_000),
                Merged::Insert(..)
            ),
            "a failure long after is a new incident"
        );
    }

    #[test]
    fn an_instance_gone_silent_does_not_hold_a_fleet_incident_open() {
        let a = stored(merge(&[], &fact(&["db"], 0, Phase::Open), "a", 300_000), 1);
        let both = stored(
            merge(
                std::slice::from_ref(&a),
                &fact(&["db"], 1_000, Phase::Open),
                "b",
                300_000,
            ),
            1,
        );
        // a says it again a minute later: only when it was heard changes, not the incident.
        let again = stored(
            merge(
                std::slice::from_ref(&both),
                &fact(&["db"], 60_000, Phase::Open),
                "a",
                300_000,
            ),
            1,
        );
        assert_eq!(again.updated, both.updated, "said again, not changed");
        assert_eq!(again.members["a"].seen, 60_000);
        // b recovers; a (still failing when last heard) is silent for less than GONE_AFTER.
        let b_clear = stored(
            merge(
                std::slice::from_ref(&again),
                &fact(&["db"], 200_000, Phase::Resolved { at: 100_000 }),
                "b",
                300_000,
            ),
            1,
        );
        assert_eq!(b_clear.resolved, None);
        assert_eq!(sweep(&b_clear, 200_000), None, "a was heard 140 s ago");
        let (swept, status, message) = sweep(&b_clear, 60_000 + GONE_AFTER_MS).unwrap();
        assert_eq!(status, UpdateStatus::Resolved);
        assert_eq!(
            swept.resolved,
            Some(100_000),
            "dated by the one that recovered"
        );
        assert!(message.contains("not waited for"), "{message}");
        // Every member silent: closed, dated when last heard.
        let (closed, _, message) = sweep(&again, 60_000 + GONE_AFTER_MS).unwrap();
        assert_eq!(closed.resolved, Some(60_000));
        assert!(message.contains("closed"), "{message}");
    }

    #[test]
    fn another_root_opens_another_incident_and_a_repeated_fact_changes_nothing() {
        let db = stored(merge(&[], &fact(&["db"], 0, Phase::Open), "a", 1), 1);
        assert!(matches!(
            merge(
                std::slice::from_ref(&db),
                &fact(&["cache"], 5, Phase::Open),
                "a",
                1
            ),
            Merged::Insert(..)
        ));
        assert_eq!(
            merge(
                std::slice::from_ref(&db),
                &fact(&["db"], 0, Phase::Open),
                "a",
                1
            ),
            Merged::Nothing
        );
        assert_eq!(
            merge(&[], &fact(&["db"], 9, Phase::Resolved { at: 9 }), "a", 1),
            Merged::Nothing
        );
    }
}
