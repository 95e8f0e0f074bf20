//! The order in which a call tries the nodes: an exact weighted shuffle by success rate.

use std::time::Duration;

use status_core::Rng;

use super::stats::{weight, NodeStats};
use crate::limit::Outcome;

/// The pool's state machine: each node's stats, by a stable key, told the time, the outcomes
/// and its random numbers. The tower service ([`Pool`](super::Pool)) and the simulator drive
/// the same code.
#[derive(Debug, Clone, Default)]
pub struct Selector<K> {
    nodes: Vec<(K, NodeStats)>,
    /// Each node's weight, valid for one bucket period until the node records again.
    weights: Vec<Option<f64>>,
    /// The bucket period the cached weights belong to.
    period: u64,
    /// Nodes not yet tried in the current cascade (scratch).
    untried: Vec<usize>,
}

impl<K: PartialEq + Clone> Selector<K> {
    /// No nodes.
    #[must_use]
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            weights: Vec::new(),
            period: 0,
            untried: Vec::new(),
        }
    }

    /// Adds a node without history (it competes as a healthy one); a key already there is
    /// left as it is.
    pub fn add(&mut self, key: K) {
        if !self.nodes.iter().any(|(k, _)| *k == key) {
            self.nodes.push((key, NodeStats::new()));
            // The sticky floor depends on the number of nodes.
            self.weights = vec![None; self.nodes.len()];
        }
    }

    /// Removes a node and its history; whether it was there.
    pub fn remove(&mut self, key: &K) -> bool {
        let before = self.nodes.len();
        self.nodes.retain(|(k, _)| k != key);
        self.weights = vec![None; self.nodes.len()];
        self.nodes.len() != before
    }

    /// The nodes' keys, in the order they were added.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.nodes.iter().map(|(k, _)| k)
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
            .map(|(k, stats)| (k.clone(), stats.rate(now, n)))
            .collect()
    }

    /// The order to try the nodes in at `now` (indices into [`keys`](Self::keys)), written
    /// into `order`: a weighted shuffle by [`weight`] (the success rate cubed, at least
    /// [`WEIGHT_FLOOR`](super::WEIGHT_FLOOR)), drawn from `rng`.
    pub fn order(&mut self, now: Duration, rng: &mut Rng, order: &mut Vec<usize>) {
        self.refresh(now);
        let mut keyed: Vec<(Key, usize)> = self
            .weights
            .iter()
            .enumerate()
            .map(|(i, w)| (Key::draw(w.unwrap_or(0.0), rng), i))
            .collect();
        keyed.sort_unstable_by_key(|&(key, _)| std::cmp::Reverse(key));
        order.clear();
        order.extend(keyed.into_iter().map(|(_, i)| i));
    }

    /// Records how a request to `key` ended at `now`: a success counts as finished and
    /// successful; a drop (timeout, overload) and an ignore (an error unrelated to load)
    /// count as finished and failed. A key no longer in the pool is ignored.
    pub fn record(&mut self, key: &K, now: Duration, outcome: Outcome) {
        if let Some(i) = self.nodes.iter().position(|(k, _)| k == key) {
            self.nodes[i].1.record(now, outcome == Outcome::Success);
            self.weights[i] = None;
        }
    }

    /// The cascade at `now`: offers nodes to `take` in a weighted random order (the same
    /// distribution as [`order`](Self::order): each next node drawn among the untried with
    /// probability proportional to its weight, nodes of weight zero last), until `take`
    /// accepts one; that node's index and what `take` returned, or `None` if it refused
    /// them all. Costs one random number and a pass over the weights per node offered, and
    /// recomputes only the weights that changed.
    pub fn cascade<T>(
        &mut self,
        now: Duration,
        rng: &mut Rng,
        mut take: impl FnMut(usize) -> Option<T>,
    ) -> Option<(usize, T)> {
        self.refresh(now);
        self.untried.clear();
        self.untried.extend(0..self.nodes.len());
        let weight_of = |weights: &[Option<f64>], i: usize| weights[i].unwrap_or(0.0);
        let mut total: f64 = self
            .untried
            .iter()
            .map(|&i| weight_of(&self.weights, i))
            .sum();
        while !self.untried.is_empty() {
            let at = if total > 0.0 {
                let mut target = rng.next_f64() * total;
                let mut pick = None;
                for (at, &i) in self.untried.iter().enumerate() {
                    let w = weight_of(&self.weights, i);
                    if w > 0.0 {
                        pick = Some(at);
                        if target < w {
                            break;
                        }
                        target -= w;
                    }
                }
                // Rounding can leave the target past the end: the last weighted one.
                let Some(pick) = pick else {
                    total = 0.0;
                    continue;
                };
                pick
            } else {
                // Only nodes of weight zero are left: uniformly.
                rng.below(self.untried.len() as u64) as usize
            };
            let i = self.untried.swap_remove(at);
            total = (total - weight_of(&self.weights, i)).max(0.0);
            if total < 1e-300 {
                total = self
                    .untried
                    .iter()
                    .map(|&j| weight_of(&self.weights, j))
                    .sum();
            }
            if let Some(taken) = take(i) {
                return Some((i, taken));
            }
        }
        None
    }

    /// Recomputes the weights that changed since `now`'s bucket period began.
    fn refresh(&mut self, now: Duration) {
        let period = (now.as_millis() / super::stats::BUCKET_PERIOD.as_millis()) as u64;
        if period != self.period {
            self.period = period;
            self.weights.iter_mut().for_each(|w| *w = None);
        }
        let n = self.nodes.len();
        for ((_, stats), cached) in self.nodes.iter_mut().zip(&mut self.weights) {
            if cached.is_none() {
                *cached = Some(weight(stats.rate(now, n)));
            }
        }
    }
}

/// A node's place in the shuffle. Efraimidis and Spirakis: sorting by `u^(1/w)` descending,
/// `u` uniform, draws without replacement with probability proportional to the weights,
/// exactly. Kept as `ln(u) / w`, the same order without underflow for tiny weights; nodes of
/// weight zero come after every other, in random order.
#[derive(Debug, Clone, Copy)]
struct Key {
    positive: bool,
    value: f64,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.positive
            .cmp(&other.positive)
            .then(self.value.total_cmp(&other.value))
    }
}

impl Key {
    fn draw(weight: f64, rng: &mut Rng) -> Self {
        // In (0, 1]: ln is finite.
        let u = 1.0 - rng.next_f64();
        if weight > 0.0 && weight.is_finite() {
            Self {
                positive: true,
                value: u.ln() / weight,
            }
        } else {
            Self {
                positive: false,
                value: u,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::WEIGHT_FLOOR;

    const S: Duration = Duration::from_secs(1);

    fn selector(n: usize) -> Selector<usize> {
        let mut s = Selector::new();
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
