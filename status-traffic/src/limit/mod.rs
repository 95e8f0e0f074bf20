//! Concurrency limits that adapt to what the work's latency and drops say.
//!
//! Four algorithms behind one trait, [`Algorithm`]: [`Fixed`], [`Aimd`], [`Gradient2`] and
//! [`Vegas`]. None reads a clock: a [`Limiter`] is told the time by its driver, measures each
//! lease's round trip, aggregates the samples of each window into a [`Tally`] and hands it to
//! its algorithm, which answers the new limit.
//!
//! Where the well-known implementations go wrong, these do not:
//! - a **drop** (a timeout, an overload answer from downstream) is a signal to every
//!   algorithm, not a sample to ignore;
//! - [`Gradient2`]'s long-term baseline learns only from windows that are not overloaded, so
//!   steady modest overload cannot ratchet it (and the limit) upward forever;
//! - [`Vegas`]'s no-load round trip is the least of recent *window means*, so one lucky fast
//!   sample cannot become it;
//! - each recovers from its floor once the load falls.

/// `initial` and `bounds` for an algorithm with the fields `limit: f64`, `min` and `max`.
macro_rules! bounded {
    ($algorithm:ty) => {
        impl $algorithm {
            /// Starts at `initial` (clamped to the bounds).
            #[must_use]
            pub fn initial(mut self, initial: usize) -> Self {
                self.limit = initial.clamp(self.min, self.max) as f64;
                self
            }

            /// Keeps the limit within `min..=max` (`min` at least 1).
            #[must_use]
            pub fn bounds(mut self, min: usize, max: usize) -> Self {
                self.min = min.max(1);
                self.max = max.max(self.min);
                self.limit = self.limit.clamp(self.min as f64, self.max as f64);
                self
            }
        }
    };
}

mod aimd;
mod choice;
mod fixed;
mod gradient2;
mod limiter;
mod vegas;
mod window;

pub use self::aimd::Aimd;
pub use self::choice::LimitChoice;
pub use self::fixed::Fixed;
pub use self::gradient2::Gradient2;
pub(crate) use self::limiter::Ticket;
pub use self::limiter::{Lease, Limiter};
pub use self::vegas::Vegas;
pub use self::window::{Tally, WindowPolicy};

/// What became of a piece of work that held a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// It was done: its round trip is a sample.
    Success,
    /// It was dropped for overload: timed out, or refused downstream. The limit backs off.
    Drop,
    /// It says nothing about load (a client went away, a bad request): not a sample.
    Ignore,
}

/// A concurrency-limit algorithm: told each closed window, it answers the new limit.
///
/// Implementations are pure: no clock, no sleep, no randomness.
pub trait Algorithm: Send + std::fmt::Debug + 'static {
    /// The limit now.
    fn limit(&self) -> usize;

    /// Takes one window's samples into account; answers the new limit (at least 1).
    fn update(&mut self, window: &Tally) -> usize;
}

/// `log10(limit)` rounded down, at least 1: the step of [`Vegas`].
fn log10_step(limit: f64) -> f64 {
    limit.log10().floor().max(1.0)
}
