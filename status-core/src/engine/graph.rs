//! The dependency graph: cycle detection and attributing failures to failing ancestors.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::entry::Entry;
use crate::{CheckResult, CheckStatus, DependencyId, SystemReport};

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
        .map(|(i, r)| (r.id.as_str(), i))
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

/// The causes of a failing dependency with `parents`, read from a report whose results
/// already carry theirs.
pub(super) fn causes_from_report(
    parents: &[DependencyId],
    report: &SystemReport,
) -> Vec<DependencyId> {
    let mut causes = Vec::new();
    for parent in parents {
        if let Some(r) = report.result(parent.as_str()) {
            if r.status == CheckStatus::Ok {
                continue;
            }
            if r.blocked_by.is_empty() {
                causes.push(parent.clone());
            } else {
                causes.extend(r.blocked_by.iter().cloned());
            }
        }
    }
    causes.sort();
    causes.dedup();
    causes
}
