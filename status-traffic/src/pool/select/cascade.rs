//! The cascade: the nodes offered to a caller one at a time, in the shuffle's weighted order,
//! until one is taken; and the fill order it starts from.

#[allow(clippy::wildcard_imports)]
use super::*;

impl<K: PartialEq + Clone, V> Selector<K, V> {
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
        self.cascade_with(now, rng, |i, _| take(i))
    }

    /// [`cascade`](Self::cascade), `take` told each node's value too.
    pub fn cascade_with<T>(
        &mut self,
        now: Duration,
        rng: &mut Rng,
        mut take: impl FnMut(usize, &V) -> Option<T>,
    ) -> Option<(usize, T)> {
        self.refresh(now);
        let taken = self.cascade_passes(now, rng, &mut take);
        if let Some((i, _)) = &taken {
            self.nodes[*i].in_flight += 1;
        }
        taken
    }

    /// The fill order: a scrambled order of the nodes' serial numbers, read as a ring from an
    /// offset that moves by a twenty-fifth of the nodes (at least one) every bucket period.
    /// The nodes filled first change a few at a time, and every node takes its turn at the
    /// front within 25 periods (about two minutes).
    pub(super) fn sort_ranks(&mut self) {
        self.by_rank = (0..self.nodes.len()).collect();
        let nodes = &self.nodes;
        self.by_rank
            .sort_unstable_by_key(|&i| scramble(nodes[i].serial));
    }

    /// Where the ring of [`sort_ranks`](Self::sort_ranks) starts this period.
    fn fill_offset(&self) -> usize {
        let n = self.by_rank.len().max(1);
        let step = (n / FILL_TURN).max(1) as u64;
        (self.period.wrapping_mul(step) % n as u64) as usize
    }

    /// The cascade's passes: idle nodes in fill order (one of weight under 1 offered with
    /// that chance); then every node not held back, in the weighted order; then the held ones.
    fn cascade_passes<T>(
        &mut self,
        now: Duration,
        rng: &mut Rng,
        take: &mut impl FnMut(usize, &V) -> Option<T>,
    ) -> Option<(usize, T)> {
        let (n, offset) = (self.by_rank.len(), self.fill_offset());
        for k in 0..if self.fill { n } else { 0 } {
            let i = self.by_rank[(k + offset) % n];
            if self.nodes[i].in_flight > 0 || self.held(i, now) {
                continue;
            }
            let w = self.nodes[i].weight.unwrap_or(0.0);
            if w < 1.0 && rng.next_f64() >= w {
                continue;
            }
            if let Some(taken) = take(i, &self.nodes[i].value) {
                return Some((i, taken));
            }
        }
        // Nodes not held back, in the weighted order; then the held ones, likewise.
        for held in [false, true] {
            if held && self.hold.is_zero() {
                break; // nothing is ever held
            }
            self.untried.clear();
            let nodes = &self.nodes;
            self.untried
                .extend((0..nodes.len()).filter(|&i| (nodes[i].held_until > now) == held));
            if let Some(taken) = self.cascade_untried(rng, take) {
                return Some(taken);
            }
        }
        None
    }

    /// One pass of the cascade over the nodes in `untried`.
    fn cascade_untried<T>(
        &mut self,
        rng: &mut Rng,
        take: &mut impl FnMut(usize, &V) -> Option<T>,
    ) -> Option<(usize, T)> {
        let weight_of = |nodes: &[Slot<K, V>], i: usize| nodes[i].weight.unwrap_or(0.0);
        let mut total: f64 = self
            .untried
            .iter()
            .map(|&i| weight_of(&self.nodes, i))
            .sum();
        while !self.untried.is_empty() {
            let at = if total > 0.0 {
                let mut target = rng.next_f64() * total;
                let mut pick = None;
                for (at, &i) in self.untried.iter().enumerate() {
                    let w = weight_of(&self.nodes, i);
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
            total = (total - weight_of(&self.nodes, i)).max(0.0);
            if total < 1e-300 {
                total = self
                    .untried
                    .iter()
                    .map(|&j| weight_of(&self.nodes, j))
                    .sum();
            }
            if let Some(taken) = take(i, &self.nodes[i].value) {
                return Some((i, taken));
            }
        }
        None
    }
}
