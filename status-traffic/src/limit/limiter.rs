//! The limiter: leases under the limit, each ending as a sample for the algorithm.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::window::Aggregator;
use super::{Algorithm, Outcome, Tally, WindowPolicy};
use crate::sync::lock;

/// Hands out leases while fewer than the limit are held, and feeds how each ended to its
/// [`Algorithm`], a window at a time. Cheap to clone: clones share the limit.
///
/// It never reads a clock: its driver tells it the time, as a [`Duration`] since an origin of
/// the driver's choosing (a tower layer uses Tokio's clock, the simulator its virtual one).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_traffic::limit::{Fixed, Limiter};
///
/// let limiter = Limiter::new(Fixed::new(1));
/// let now = Duration::ZERO;
/// let lease = limiter.try_acquire(now).unwrap();
/// assert!(limiter.try_acquire(now).is_none(), "at the limit");
/// drop(lease); // ends as ignored
/// assert!(limiter.try_acquire(now).is_some());
/// ```
#[derive(Debug, Clone)]
pub struct Limiter {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    algorithm: Box<dyn Algorithm>,
    limit: usize,
    in_flight: usize,
    window: Aggregator,
    last: Option<Tally>,
}

impl Limiter {
    /// A limiter run by `algorithm`, with the default [`WindowPolicy`].
    pub fn new(algorithm: impl Algorithm) -> Self {
        Self::with_window(algorithm, WindowPolicy::default())
    }

    /// A limiter run by `algorithm`, its samples aggregated by `policy`.
    pub fn with_window(algorithm: impl Algorithm, policy: WindowPolicy) -> Self {
        let limit = algorithm.limit().max(1);
        Self {
            state: Arc::new(Mutex::new(State {
                algorithm: Box::new(algorithm),
                limit,
                in_flight: 0,
                window: Aggregator::new(policy),
                last: None,
            })),
        }
    }

    /// The limit now.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.lock().limit
    }

    /// Leases held now.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// The last window the algorithm was told, if any closed yet.
    #[must_use]
    pub fn last_tally(&self) -> Option<Tally> {
        self.lock().last
    }

    /// A lease if fewer than the limit are held, started at `now`.
    #[must_use = "a lease is released as soon as it is dropped"]
    pub fn try_acquire(&self, now: Duration) -> Option<Lease> {
        let ticket = self.try_ticket(now)?;
        Some(Lease {
            limiter: Some(Arc::clone(&self.state)),
            ticket,
        })
    }

    /// A lease without a handle on the limiter, for a driver that keeps the limiter at hand
    /// and ends it with [`finish`](Self::finish): no reference count to touch per request.
    /// Never dropped unfinished, or the place it holds is lost.
    pub(crate) fn try_ticket(&self, now: Duration) -> Option<Ticket> {
        let mut state = self.lock();
        if state.in_flight >= state.limit {
            return None;
        }
        state.in_flight += 1;
        Some(Ticket {
            start: now,
            in_flight: state.in_flight,
        })
    }

    /// Ends `ticket` as `outcome` at `now`.
    pub(crate) fn finish(&self, ticket: Ticket, now: Duration, outcome: Outcome) {
        end(&self.state, ticket, now, outcome);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// Leave to run one piece of work under a [`Limiter`]. End it with [`success`](Self::success)
/// or [`dropped`](Self::dropped); dropped without either, it ends as [`Outcome::Ignore`].
#[derive(Debug)]
pub struct Lease {
    limiter: Option<Arc<Mutex<State>>>,
    ticket: Ticket,
}

/// What a lease is, without its handle on the limiter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    start: Duration,
    in_flight: usize,
}

fn end(state: &Mutex<State>, ticket: Ticket, now: Duration, outcome: Outcome) {
    let mut state = lock(state);
    state.in_flight = state.in_flight.saturating_sub(1);
    let rtt = now.saturating_sub(ticket.start);
    if let Some(window) = state.window.add(now, rtt, ticket.in_flight, outcome) {
        state.limit = state.algorithm.update(&window).max(1);
        state.last = Some(window);
    }
}

impl Lease {
    /// When the lease was granted.
    #[must_use]
    pub fn started(&self) -> Duration {
        self.ticket.start
    }

    /// The lease as a [`Ticket`], to be ended with [`Limiter::finish`].
    pub(crate) fn into_ticket(mut self) -> Ticket {
        self.limiter = None;
        self.ticket
    }

    /// The work was done at `now`: its round trip is a sample.
    pub fn success(mut self, now: Duration) {
        self.end(now, Outcome::Success);
    }

    /// The work was dropped for overload at `now` (timed out, refused downstream).
    pub fn dropped(mut self, now: Duration) {
        self.end(now, Outcome::Drop);
    }

    /// The work says nothing about load: released, not a sample.
    pub fn ignore(mut self) {
        self.end(self.ticket.start, Outcome::Ignore);
    }

    /// Ends the lease as `outcome` at `now`.
    pub fn finish(mut self, now: Duration, outcome: Outcome) {
        self.end(now, outcome);
    }

    fn end(&mut self, now: Duration, outcome: Outcome) {
        if let Some(limiter) = self.limiter.take() {
            end(&limiter, self.ticket, now, outcome);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.end(self.ticket.start, Outcome::Ignore);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{Aimd, Fixed};

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn leases_are_bounded_by_the_limit_and_released_however_they_end() {
        let limiter = Limiter::new(Fixed::new(2));
        let a = limiter.try_acquire(Duration::ZERO).unwrap();
        let b = limiter.try_acquire(Duration::ZERO).unwrap();
        assert!(limiter.try_acquire(Duration::ZERO).is_none());
        a.success(10 * MS);
        assert_eq!(limiter.in_flight(), 1);
        b.ignore();
        let c = limiter.try_acquire(Duration::ZERO).unwrap();
        drop(c);
        assert_eq!(limiter.in_flight(), 0);
    }

    #[test]
    fn windows_of_outcomes_move_the_limit() {
        let policy = WindowPolicy {
            min_samples: 10,
            min_duration: 100 * MS,
        };
        let limiter = Limiter::with_window(Aimd::default(), policy);
        let mut now = Duration::ZERO;
        // A window of drops: 20 → 18.
        for _ in 0..10 {
            let lease = limiter.try_acquire(now).unwrap();
            now += 20 * MS;
            lease.dropped(now);
        }
        assert_eq!(limiter.limit(), 18);
        let window = limiter.last_tally().unwrap();
        assert_eq!((window.successes, window.drops), (0, 10));
        // Ignored leases are no samples: nothing closes.
        for _ in 0..50 {
            limiter.try_acquire(now).unwrap().ignore();
            now += 20 * MS;
        }
        assert_eq!(limiter.limit(), 18);
        assert_eq!(limiter.last_tally(), Some(window));
    }
}
