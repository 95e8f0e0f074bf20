//! Orders without bias: the fill order's ranks, and the weighted shuffle's keys.

use status_core::Rng;

/// A well-mixed 64-bit value of `n` (splitmix64's finalizer): ranks that look random and
/// need no random numbers.
pub(super) fn scramble(n: u64) -> u64 {
    let mut z = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A node's place in the shuffle. Efraimidis and Spirakis: sorting by `u^(1/w)` descending,
/// `u` uniform, draws without replacement with probability proportional to the weights,
/// exactly. Kept as `ln(u) / w`, the same order without underflow for tiny weights; nodes of
/// weight zero come after every other, in random order.
#[derive(Debug, Clone, Copy)]
pub(super) struct Key {
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
    pub(super) fn draw(weight: f64, rng: &mut Rng) -> Self {
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
