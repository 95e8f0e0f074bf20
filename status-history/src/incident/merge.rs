//! [`merge`]: how a store folds a tracker's fact into the incidents it keeps. Pure, so that
//! SQLite and PostgreSQL merge alike: each reads the candidates, merges, and writes back in
//! one transaction.

use std::collections::BTreeMap;

use status_core::CheckStatus;

use super::{Impact, IncidentFact, Phase, UpdateStatus};

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
    /// Each instance that joined it, with when it saw it resolve (`None` while it fails).
    pub members: BTreeMap<String, Option<i64>>,
}

/// What a merge asks the store to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Insert this incident (its id is the store's to give), with the engine's first update.
    Insert(StoredIncident, UpdateStatus, String),
    /// Replace the incident of this id, adding the engine's update if there is one.
    Update(StoredIncident, Option<(UpdateStatus, String)>),
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
            members: BTreeMap::from([(instance.to_owned(), None)]),
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
    next.updated = fact.at;
    let was_resolved = next.resolved.is_some();
    let update = match fact.phase {
        Phase::Open => {
            next.members.insert(instance.to_owned(), None);
            next.resolved = None;
            was_resolved.then(|| {
                (
                    UpdateStatus::Investigating,
                    "It failed again within the quiet time: reopened.".to_owned(),
                )
            })
        }
        Phase::Resolved { at } => {
            next.members.insert(instance.to_owned(), Some(at));
            let all = next.members.values().all(Option::is_some);
            if all && !was_resolved {
                next.resolved = next.members.values().flatten().max().copied();
                Some((
                    UpdateStatus::Resolved,
                    "Everything it covers has been healthy for the quiet time.".to_owned(),
                ))
            } else {
                None
            }
        }
    };
    if next == *found && update.is_none() {
        return Merged::Nothing;
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
                &fact(&["db"], 400_000, Phase::Resolved { at: 100_000 }),
                "a",
                300_000,
            ),
            7,
        );
        assert_eq!(a_clear.resolved, None, "b still fails");
        let Merged::Update(both, Some((UpdateStatus::Resolved, _))) = merge(
            &[a_clear],
            &fact(&["db"], 500_000, Phase::Resolved { at: 200_000 }),
            "b",
            300_000,
        ) else {
            panic!("resolved with an update");
        };
        assert_eq!(both.resolved, Some(200_000), "dated by the last to recover");

        let Merged::Update(reopened, Some((UpdateStatus::Investigating, _))) = merge(
            std::slice::from_ref(&both),
            &fact(&["db"], 600_000, Phase::Open),
            "a",
            300_000,
        ) else {
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
