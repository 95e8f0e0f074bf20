//! The status lattice and the urgency fold obey their laws.

use proptest::prelude::*;
use status_core::{system_status, CheckStatus, Urgency};

fn status() -> impl Strategy<Value = CheckStatus> {
    prop::sample::select(CheckStatus::ALL.to_vec())
}

fn urgency() -> impl Strategy<Value = Urgency> {
    prop::sample::select(Urgency::ALL.to_vec())
}

fn results() -> impl Strategy<Value = Vec<(Urgency, CheckStatus)>> {
    prop::collection::vec((urgency(), status()), 0..40)
}

proptest! {
    #[test]
    fn prop_no_better_than_is_max_and_no_worse_than_is_min(a in status(), b in status()) {
        prop_assert_eq!(a.no_better_than(b), a.max(b));
        prop_assert_eq!(a.no_worse_than(b), a.min(b));
        prop_assert_eq!(a.no_better_than(b).severity(), a.severity().max(b.severity()));
    }

    #[test]
    fn prop_lattice_laws(a in status(), b in status(), c in status()) {
        // Commutative, associative, idempotent, absorbing.
        prop_assert_eq!(a.no_better_than(b), b.no_better_than(a));
        prop_assert_eq!(a.no_worse_than(b), b.no_worse_than(a));
        prop_assert_eq!(a.no_better_than(b).no_better_than(c), a.no_better_than(b.no_better_than(c)));
        prop_assert_eq!(a.no_worse_than(b).no_worse_than(c), a.no_worse_than(b.no_worse_than(c)));
        prop_assert_eq!(a.no_better_than(a), a);
        prop_assert_eq!(a.no_worse_than(a), a);
        prop_assert_eq!(a.no_better_than(a.no_worse_than(b)), a);
        prop_assert_eq!(a.no_worse_than(a.no_better_than(b)), a);
        // OK and OUTAGE are the bounds.
        prop_assert_eq!(a.no_better_than(CheckStatus::Ok), a);
        prop_assert_eq!(a.no_worse_than(CheckStatus::Outage), a);
    }

    #[test]
    fn prop_comparisons_are_strict_and_opposite(a in status(), b in status()) {
        prop_assert_eq!(a.is_better_than(b), b.is_worse_than(a));
        prop_assert!(!(a.is_better_than(b) && a.is_worse_than(b)));
        prop_assert_eq!(a.is_better_than(b) || a.is_worse_than(b), a != b);
        prop_assert_eq!(a.is_better_than(b), a.no_better_than(b) == b && a != b);
    }

    #[test]
    fn prop_downgrade_never_improves_and_is_monotone(
        u in urgency(), system in status(), dep in status(), worse in status(),
    ) {
        let after = u.downgrade_with(system, dep);
        prop_assert!(!after.is_better_than(system));
        // A worse dependency never gives a better system.
        let worse_dep = dep.no_better_than(worse);
        prop_assert!(!u.downgrade_with(system, worse_dep).is_better_than(after));
        // An OK dependency changes nothing; urgency None changes nothing.
        prop_assert_eq!(u.downgrade_with(system, CheckStatus::Ok), system);
        prop_assert_eq!(Urgency::None.downgrade_with(system, dep), system);
        // Required passes the dependency's status through.
        prop_assert_eq!(Urgency::Required.downgrade_with(CheckStatus::Ok, dep), dep);
    }

    #[test]
    fn prop_system_status_is_the_worst_capped_result(results in results()) {
        let expected = results
            .iter()
            .map(|(u, s)| u.cap(*s))
            .max()
            .unwrap_or(CheckStatus::Ok);
        prop_assert_eq!(system_status(results.iter().copied()), expected);
    }

    #[test]
    fn prop_system_status_does_not_depend_on_order(
        (results, shuffled) in results().prop_flat_map(|r| {
            let shuffled = Just(r.clone()).prop_shuffle();
            (Just(r), shuffled)
        }),
    ) {
        prop_assert_eq!(
            system_status(results.iter().copied()),
            system_status(shuffled.iter().copied()),
        );
        let reversed: Vec<_> = results.iter().rev().copied().collect();
        prop_assert_eq!(system_status(results), system_status(reversed));
    }

    #[test]
    fn prop_fold_splits(left in results(), right in results()) {
        // Folding two halves and combining them gives the fold of the whole.
        let whole: Vec<_> = left.iter().chain(&right).copied().collect();
        prop_assert_eq!(
            system_status(whole),
            system_status(left).no_better_than(system_status(right)),
        );
    }
}
