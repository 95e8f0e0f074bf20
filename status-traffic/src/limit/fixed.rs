//! A limit that never moves.

use super::{Algorithm, Tally};

/// A fixed limit: `n` pieces of work at once, whatever the samples say.
///
/// # Example
///
/// ```
/// use status_traffic::limit::{Algorithm, Fixed};
///
/// assert_eq!(Fixed::new(8).limit(), 8);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fixed(usize);

impl Fixed {
    /// A limit of `n` (at least 1).
    #[must_use]
    pub fn new(n: usize) -> Self {
        Self(n.max(1))
    }
}

impl Algorithm for Fixed {
    fn limit(&self) -> usize {
        self.0
    }

    fn update(&mut self, _: &Tally) -> usize {
        self.0
    }
}
