//! The order in which a call tries the nodes: an exact weighted shuffle by success rate.

use std::time::Duration;

use status_core::Rng;

mod cascade;

use super::order::{scramble, Key};
use super::stats::{weight, NodeStats};
use crate::limit::Outcome;

/// The pool's state machine: each node's stats, by a stable key, told the time, the outcomes
/// and its random numbers. The tower service ([`Pool`](super::Pool)) and the simulator drive
/// the same code. Each node may carry a value `V` of the driver's (the pool keeps its service
/// and limiter there), so that nothing outside is kept in step with the nodes' order.
#[derive(Debug, Clone)]
pub struct Selector<K, V = ()> {
    /// The nodes, in the order they were added: one slot each.
    nodes: Vec<Slot<K, V>>,
    /// The bucket period the cached weights belong to.
    period: u64,
    /// Nodes not yet tried in the current cascade (scratch).
    untried: Vec<usize>,
    /// How long a failure holds a node back (zero: never).
    hold: Duration,
    /// The largest share of the nodes held back at once.
    max_held: f64,
    /// Holds not taken because the share was reached.
    holds_refused: u64,
    /// Whether idle nodes are filled in rank order first (the default), or every call draws
    /// from the weighted order ([`spread`](Self::spread)).
    fill: bool,
    /// The nodes in their fill order for the current bucket period.
    by_rank: Vec<usize>,
    /// Nodes ever added.
    added: u64,
}

/// One node: its key, its history, and what the cascade keeps of it.
#[derive(Debug, Clone)]
struct Slot<K, V> {
    key: K,
    /// The driver's own value for the node.
    value: V,
    stats: NodeStats,
    /// Its weight, valid for one bucket period until it records again.
    weight: Option<f64>,
    /// Until when it is held back after a failure.
    held_until: Duration,
    /// Calls it took that have not finished (told by `cascade` and `record`).
    in_flight: u32,
    /// Its serial number (a count of nodes ever added), whence its rank each period.
    serial: u64,
}

/// How long a failed call holds its node back by default: the study's error hold.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(5);

/// In how many bucket periods every node takes its turn at the front of the fill order.
const FILL_TURN: usize = 25;

/// The largest share of the nodes held back at once by default.
pub const DEFAULT_MAX_HELD: f64 = 0.5;

impl<K: PartialEq + Clone, V> Default for Selector<K, V> {
    fn default() -> Self {
        Self::with_values()
    }
}

impl<K: PartialEq + Clone> Selector<K> {
    /// No nodes, carrying no value.
    #[must_use]
    pub fn new() -> Self {
        Self::with_values()
    }
}

impl<K: PartialEq + Clone, V> Selector<K, V> {
    /// No nodes; each will carry a value `V` ([`insert`](Self::insert)).
    #[must_use]
    pub fn with_values() -> Self {
        Self {
            nodes: Vec::new(),
            period: 0,
            untried: Vec::new(),
            hold: DEFAULT_HOLD,
            max_held: DEFAULT_MAX_HELD,
            holds_refused: 0,
            fill: true,
            by_rank: Vec::new(),
            added: 0,
        }
    }

    /// Every call draws its node from the weighted order, idle or not, instead of filling
    /// idle nodes in rank order first: load spreads evenly at any rate, at the price of
    /// meeting more of the failures that come and go (see the [module docs](super)).
    #[must_use]
    pub fn spread(mut self) -> Self {
        self.fill = false;
        self
    }

    /// A failed call holds its node back for `hold` (zero: never), while no more than
    /// `max_share` of the nodes are held at once: a held node is offered only after every
    /// other. Past the share, a failure holds nothing (counted): when most nodes fail
    /// together, calls go on failing fast instead of emptying the pool.
    #[must_use]
    pub fn hold(mut self, hold: Duration, max_share: f64) -> Self {
        self.hold = hold;
        self.max_held = max_share.clamp(0.0, 1.0);
        self
    }

    /// Failures that held nothing because the share of held nodes was reached.
    #[must_use]
    pub fn holds_refused(&self) -> u64 {
        self.holds_refused
    }

    /// Whether node `i` is held back at `now`.
    fn held(&self, i: usize, now: Duration) -> bool {
        self.nodes[i].held_until > now
    }

    /// Adds a node without history (it competes as a healthy one) and with the default
    /// value; a key already there is left as it is.
    pub fn add(&mut self, key: K)
    where
        V: Default,
    {
        self.insert(key, V::default());
    }

    /// Adds a node without history carrying `value`; a key already there is left as it is
    /// (`false`).
    pub fn insert(&mut self, key: K, value: V) -> bool {
        if self.nodes.iter().any(|s| s.key == key) {
            return false;
        }
        self.added += 1;
        self.nodes.push(Slot {
            key,
            value,
            stats: NodeStats::new(),
            weight: None,
            held_until: Duration::ZERO,
            in_flight: 0,
            serial: self.added,
        });
        self.sort_ranks();
        // The sticky floor depends on the number of nodes.
        self.forget_weights();
        true
    }

    /// The value of node `i` (an index into [`keys`](Self::keys)).
    ///
    /// # Panics
    ///
    /// When there is no node `i`.
    #[must_use]
    pub fn value(&self, i: usize) -> &V {
        &self.nodes[i].value
    }

    /// The nodes' values, in the order they were added.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.nodes.iter().map(|s| &s.value)
    }

    /// The nodes' values, in the order they were added, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.nodes.iter_mut().map(|s| &mut s.value)
    }

    /// Removes a node and its history; whether it was there.
    pub fn remove(&mut self, key: &K) -> bool {
        let Some(i) = self.nodes.iter().position(|s| s.key == *key) else {
            return false;
        };
        self.nodes.remove(i);
        self.sort_ranks();
        self.forget_weights();
        true
    }

    /// The nodes' keys, in the order they were added.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.nodes.iter().map(|s| &s.key)
    }

    /// How many nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Each node's success rate at `now`, in the order they were added.
    pub fn rates(&mut self, now: Duration) -> Vec<(K, f64)> {
        let n = self.nodes.len();
        self.nodes
            .iter_mut()
            .map(|s| (s.key.clone(), s.stats.rate(now, n)))
            .collect()
    }

    /// The order to try the nodes in at `now` (indices into [`keys`](Self::keys)), written
    /// into `order`: a weighted shuffle by [`weight`] (the success rate cubed, at least
    /// [`WEIGHT_FLOOR`](super::WEIGHT_FLOOR)), drawn from `rng`.
    pub fn order(&mut self, now: Duration, rng: &mut Rng, order: &mut Vec<usize>) {
        self.refresh(now);
        let mut keyed: Vec<(Key, usize)> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, s)| (Key::draw(s.weight.unwrap_or(0.0), rng), i))
            .collect();
        keyed.sort_unstable_by_key(|&(key, _)| std::cmp::Reverse(key));
        order.clear();
        order.extend(keyed.into_iter().map(|(_, i)| i));
    }

    /// Records how a request to `key` ended at `now`: a success counts as finished and
    /// successful; a drop (timeout, overload) and an ignore (an error unrelated to load)
    /// count as finished and failed. A key no longer in the pool is ignored.
    pub fn record(&mut self, key: &K, now: Duration, outcome: Outcome) {
        self.record_as(key, now, outcome, true);
    }

    /// Records a call to `key` its caller gave up on at `now`: a drop in the node's stats,
    /// that holds it back for nothing (the caller may have had its answer from a hedge).
    pub fn abandon(&mut self, key: &K, now: Duration) {
        self.record_as(key, now, Outcome::Drop, false);
    }

    fn record_as(&mut self, key: &K, now: Duration, outcome: Outcome, may_hold: bool) {
        if let Some(i) = self.nodes.iter().position(|s| s.key == *key) {
            let success = outcome == Outcome::Success;
            let slot = &mut self.nodes[i];
            slot.in_flight = slot.in_flight.saturating_sub(1);
            slot.stats.record(now, success);
            slot.weight = None;
            if !success && may_hold && !self.hold.is_zero() && !self.held(i, now) {
                let held = (0..self.nodes.len()).filter(|&j| self.held(j, now)).count();
                #[allow(clippy::cast_precision_loss)]
                let cap = (self.max_held * self.nodes.len() as f64).floor() as usize;
                if held < cap {
                    self.nodes[i].held_until = now + self.hold;
                } else {
                    self.holds_refused += 1;
                }
            }
        }
    }

    /// Recomputes the weights that changed since `now`'s bucket period began.
    pub(super) fn refresh(&mut self, now: Duration) {
        let period = (now.as_millis() / super::stats::BUCKET_PERIOD.as_millis()) as u64;
        if period != self.period {
            self.period = period;
            self.forget_weights();
        }
        let n = self.nodes.len();
        for slot in &mut self.nodes {
            if slot.weight.is_none() {
                slot.weight = Some(weight(slot.stats.rate(now, n)));
            }
        }
    }

    /// Every cached weight, forgotten: recomputed at the next refresh.
    fn forget_weights(&mut self) {
        for slot in &mut self.nodes {
            slot.weight = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::WEIGHT_FLOOR;

    const S: Duration = Duration::from_secs(1);

    /// The weighted order alone: spread, no holds.
    fn selector(n: usize) -> Selector<usize> {
        let mut s = Selector::new().spread().hold(Duration::ZERO, 0.5);
        for i in 0..n {
            s.add(i);
        }
        s
    }

    /// How often each node comes first over `draws` shuffles.
    fn first_counts(s: &mut Selector<usize>, now: Duration, draws: usize) -> Vec<usize> {
        let mut rng = Rng::new(42);
        let mut counts = vec![0; s.len()];
        let mut order = Vec::new();
        for _ in 0..draws {
            s.order(now, &mut rng, &mut order);
            counts[order[0]] += 1;
        }
        counts
    }

    #[test]
    fn shuffle_frequencies_match_the_weights() {
        // Rates 1, 0.8 and 0.5: weights 1, 0.512 and 0.125.
        let mut s = selector(3);
        for (node, successes) in [(1, 8), (2, 5)] {
            for i in 0..10 {
                s.record(
                    &node,
                    S,
                    if i < successes {
                        Outcome::Success
                    } else {
                        Outcome::Ignore
                    },
                );
            }
        }
        let draws = 200_000;
        let counts = first_counts(&mut s, S, draws);
        let total: f64 = 1.0 + 0.512 + 0.125;
        for (node, w) in [(0, 1.0), (1, 0.512), (2, 0.125)] {
            let expected = draws as f64 * w / total;
            let sd = (expected * (1.0 - w / total)).sqrt();
            let seen = counts[node] as f64;
            assert!(
                (seen - expected).abs() < 4.0 * sd,
                "node {node}: {seen} first, expected {expected:.0} ± {sd:.0}"
            );
        }
        // And the second place, given the first, follows the remaining weights: of the draws
        // where node 0 came first, node 1 comes second 0.512 / 0.637 of the time.
        let mut rng = Rng::new(7);
        let mut order = Vec::new();
        let (mut first0, mut then1) = (0u32, 0u32);
        for _ in 0..draws {
            s.order(S, &mut rng, &mut order);
            if order[0] == 0 {
                first0 += 1;
                then1 += u32::from(order[1] == 1);
            }
        }
        let share = f64::from(then1) / f64::from(first0);
        assert!((share - 0.512 / 0.637).abs() < 0.01, "{share}");
    }

    #[test]
    fn the_cascade_draws_as_the_shuffle_does() {
        let mut s = selector(3);
        for (node, successes) in [(1, 8), (2, 5)] {
            for i in 0..10 {
                let outcome = if i < successes {
                    Outcome::Success
                } else {
                    Outcome::Ignore
                };
                s.record(&node, S, outcome);
            }
        }
        let draws = 200_000;
        let mut rng = Rng::new(11);
        let mut first = [0u32; 3];
        let (mut refused0, mut then1) = (0u32, 0u32);
        for _ in 0..draws {
            let mut offered = Vec::new();
            // Node 0 never has capacity: the cascade goes on.
            let taken = s.cascade(S, &mut rng, |i| {
                offered.push(i);
                (i != 0).then_some(i)
            });
            first[offered[0]] += 1;
            if offered[0] == 0 {
                refused0 += 1;
                then1 += u32::from(taken == Some((1, 1)));
            }
        }
        let total = 1.0 + 0.512 + 0.125;
        for (node, w) in [(0, 1.0), (1, 0.512), (2, 0.125)] {
            let expected = f64::from(draws) * w / total;
            let sd = (expected * (1.0 - w / total)).sqrt();
            let seen = f64::from(first[node]);
            assert!(
                (seen - expected).abs() < 4.0 * sd,
                "node {node}: {seen} vs {expected:.0}"
            );
        }
        let share = f64::from(then1) / f64::from(refused0);
        assert!((share - 0.512 / 0.637).abs() < 0.01, "{share}");
        // Refused by all: every node offered once, then nothing.
        let mut offered = Vec::new();
        assert_eq!(
            s.cascade(S, &mut rng, |i| {
                offered.push(i);
                None::<()>
            }),
            None
        );
        offered.sort_unstable();
        assert_eq!(offered, [0, 1, 2]);
    }

    #[test]
    fn a_failing_node_keeps_the_floors_chance_in_the_shuffle_and_the_cascade() {
        // Node 1 failed and node 3 failed too, then aged out to its sticky bucket: both weigh
        // the floor, against 1 for nodes 0 and 2.
        let mut s = selector(4);
        s.record(&3, S, Outcome::Ignore);
        s.record(&1, 31 * S, Outcome::Drop);
        let now = 31 * S;
        assert_eq!(
            s.rates(now)
                .iter()
                .map(|(_, r)| weight(*r))
                .collect::<Vec<_>>(),
            [1.0, WEIGHT_FLOOR, 1.0, WEIGHT_FLOOR]
        );
        let draws = 200_000;
        let total = 2.0 + 2.0 * WEIGHT_FLOOR;
        let expected = f64::from(draws) * WEIGHT_FLOOR / total;
        let sd = expected.sqrt();
        let first = first_counts(&mut s, now, draws as usize);
        let mut rng = Rng::new(8);
        let mut offered_first = [0u32; 4];
        for _ in 0..draws {
            let mut offered = None;
            s.cascade(now, &mut rng, |i| {
                offered.get_or_insert(i);
                Some(())
            });
            offered_first[offered.unwrap()] += 1;
        }
        for node in [1, 3] {
            for seen in [first[node] as f64, f64::from(offered_first[node])] {
                assert!(
                    (seen - expected).abs() < 4.0 * sd,
                    "node {node}: first {seen} times, expected {expected:.0} ± {sd:.0}"
                );
            }
        }
    }

    #[test]
    fn a_seed_gives_one_order() {
        let mut s = selector(30);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        s.order(S, &mut Rng::new(9), &mut a);
        s.order(S, &mut Rng::new(9), &mut b);
        assert_eq!(a, b);
        s.order(S, &mut Rng::new(10), &mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn nodes_come_and_go_by_key() {
        let mut s = Selector::new();
        s.add("a");
        s.add("b");
        s.add("a");
        assert_eq!(s.len(), 2);
        s.record(&"b", S, Outcome::Ignore);
        assert!(s.remove(&"a"));
        assert!(!s.remove(&"a"));
        s.record(&"a", S, Outcome::Success); // gone: nothing to record
        assert_eq!(s.rates(S), [("b", 0.0)]);
    }
}
