//! The dependency graph: cycle detection and attributing failures to failing ancestors.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::entry::Entry;
use crate::{CheckResult, CheckStatus, DependencyId};

/// Whether following `parents` through the registered `entries` reaches `target`.
pub(super) fn reaches(
    entries: &HashMap<DependencyId, Arc<Entry>>,
    parents: &[DependencyId],
    target: &DependencyId,
) -> bool {
    let mut seen = HashSet::new();
    let mut stack: Vec<&DependencyId> = parents.iter().collect();
    while let Some(id) = stack.pop() {
        if id == target {
            return true;
        }
        if seen.insert(id) {
            if let Some(entry) = entries.get(id) {
                stack.extend(entry.info().parents.iter());
            }
        }
    }
    false
}

/// Sets `blocked_by` on each failing result to the root causes among its failing ancestors:
/// a failing parent that is not itself blocked, or the roots of a blocked one.
pub(super) fn attribute_causes(results: &mut [Arc<CheckResult>], parents: &[&[DependencyId]]) {
    let index: HashMap<&str, usize> = results
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id().as_str(), i))
        .collect();
    let failing: Vec<bool> = results
        .iter()
        .map(|r| r.status != CheckStatus::Ok)
        .collect();
    let mut memo: Vec<Option<Vec<DependencyId>>> = vec![None; results.len()];
    let mut visiting = vec![false; results.len()];
    for i in 0..results.len() {
        if failing[i] && !parents[i].is_empty() {
            roots(i, &index, &failing, parents, &mut memo, &mut visiting);
        }
    }
    for (i, causes) in memo.into_iter().enumerate() {
        if let Some(causes) = causes.filter(|c| failing[i] && !c.is_empty()) {
            Arc::make_mut(&mut results[i]).blocked_by = causes;
        }
    }
}

fn roots(
    i: usize,
    index: &HashMap<&str, usize>,
    failing: &[bool],
    parents: &[&[DependencyId]],
    memo: &mut [Option<Vec<DependencyId>>],
    visiting: &mut [bool],
) -> Vec<DependencyId> {
    if let Some(done) = &memo[i] {
        return done.clone();
    }
    if visiting[i] {
        return Vec::new(); // a cycle; registration prevents them, be safe anyway
    }
    visiting[i] = true;
    let mut causes = Vec::new();
    for parent in parents[i] {
        let Some(&p) = index.get(parent.as_str()) else {
            continue;
        };
        if !failing[p] {
            continue;
        }
        let above = roots(p, index, failing, parents, memo, visiting);
        if above.is_empty() {
            causes.push(parent.clone());
        } else {
            causes.extend(above);
        }
    }
    causes.sort();
    causes.dedup();
    visiting[i] = false;
    memo[i] = Some(causes.clone());
    causes
}

/// The causes of a failing dependency with `parents`: each failing parent that is not itself
/// blocked, or the roots of a blocked one, found by walking the ancestors alone. `parent`
/// answers a registered dependency's status now and its own parents. What a report's
/// [`attribute_causes`] finds for one result, without building the report.
pub(super) fn causes(
    parents: &[DependencyId],
    parent: &impl Fn(&DependencyId) -> Option<(CheckStatus, Vec<DependencyId>)>,
) -> Vec<DependencyId> {
    fn walk(
        parents: &[DependencyId],
        parent: &impl Fn(&DependencyId) -> Option<(CheckStatus, Vec<DependencyId>)>,
        memo: &mut HashMap<DependencyId, Vec<DependencyId>>,
        visiting: &mut HashSet<DependencyId>,
    ) -> Vec<DependencyId> {
        let mut causes = Vec::new();
        for id in parents {
            if let Some(done) = memo.get(id) {
                causes.extend(done.iter().cloned());
                continue;
            }
            let Some((status, above)) = parent(id) else {
                continue;
            };
            if status == CheckStatus::Ok || !visiting.insert(id.clone()) {
                // Not failing, or a cycle (registration prevents them; be safe anyway).
                continue;
            }
            let roots = walk(&above, parent, memo, visiting);
            visiting.remove(id);
            let mine = if roots.is_empty() {
                vec![id.clone()]
            } else {
                roots
            };
            causes.extend(mine.iter().cloned());
            memo.insert(id.clone(), mine);
        }
        causes.sort();
        causes.dedup();
        causes
    }
    walk(parents, parent, &mut HashMap::new(), &mut HashSet::new())
}
