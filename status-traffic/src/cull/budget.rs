//! Shutdown budgets: how many instances of a fleet may cull themselves per window. Asking
//! takes a token or is refused; a budget that cannot be asked (Redis down, slow) is a refusal
//! too, never a token: an instance never culls itself without coordination.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use crate::sync::lock;
use status_core::Clock;

/// A boxed future of a budget's answer.
pub type Asking<'a> = Pin<Box<dyn Future<Output = Result<Grant, BudgetError>> + Send + 'a>>;

/// A boxed future of a budget's store taking an operator's word ([`Budget::vouch`]).
pub type Vouching<'a> = Pin<Box<dyn Future<Output = Result<(), BudgetError>> + Send + 'a>>;

/// What a budget answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// A token: the caller may cull itself. `used` tokens of `capacity` are now spent in the
    /// window.
    Token {
        /// Tokens spent in the window, this one included.
        used: u64,
    },
    /// The window's tokens are spent.
    Spent {
        /// Tokens spent in the window.
        used: u64,
    },
    /// The store did not know the budget (new, or forgotten: a store restarted empty): the
    /// window since it learnt it counts as spent, so that grants it forgot still count.
    Unknown {
        /// Until it grants again.
        left: Duration,
    },
}

/// Why a budget could not be asked. Each is a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetError {
    /// The store did not answer in time.
    TimedOut(Duration),
    /// The store could not be reached or refused the call.
    Unreachable(String),
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TimedOut(after) => write!(f, "the budget did not answer within {after:?}"),
            Self::Unreachable(why) => write!(f, "the budget is unreachable: {why}"),
        }
    }
}

impl std::error::Error for BudgetError {}

/// How a store's budget (Redis, etcd) counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BudgetWindow {
    /// At most `capacity` per window: in Redis a calendar window (numbered from the epoch by
    /// the server's clock); in etcd a window the cluster begins at the first ask after the
    /// last one ended (a lease). Worst case: twice the capacity within moments, around an
    /// edge (a full window's worth at its end, another at the start of the next).
    Fixed,
    /// At most `capacity` in any window-long span: the grant times of the last window are
    /// kept (a sorted set of at most `capacity` members). The default: its worst case is its
    /// capacity.
    #[default]
    Sliding,
}

impl BudgetWindow {
    /// `"fixed"` or `"sliding"`, as the stores name their keys and describe themselves.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::Sliding => "sliding",
        }
    }
}

/// A fleet-wide (or process-wide) budget of culls.
pub trait Budget: Send + Sync + fmt::Debug {
    /// Takes a token if the window has one left.
    fn take(&self) -> Asking<'_>;

    /// What it is, for the dashboard: `"fixed window in Redis, 10 per 600 s"`.
    fn describe(&self) -> String;

    /// An operator's word that the budget's store forgot no grant (a fleet and a store both
    /// new): a budget its store does not know then grants at once, rather than counting a
    /// window as spent first ([`Grant::Unknown`]). Never at every start: a store restarted
    /// empty would forget grants unnoticed. Nothing to do by default (a budget in this
    /// process forgets nothing while it runs).
    fn vouch(&self) -> Vouching<'_> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The grants of a budget kept in memory, pure: at most `capacity` in any `window`-long span
/// (an exact sliding window of the grant times), told the time. [`InProcessBudget`] keeps one
/// behind a lock; the simulator keeps one for a simulated fleet.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_traffic::cull::{Grant, GrantWindow};
///
/// let s = Duration::from_secs;
/// let mut budget = GrantWindow::new(1, s(10));
/// assert_eq!(budget.take(s(0)), Grant::Token { used: 1 });
/// assert_eq!(budget.take(s(9)), Grant::Spent { used: 1 });
/// assert_eq!(budget.take(s(10)), Grant::Token { used: 1 });
/// ```
#[derive(Debug, Clone)]
pub struct GrantWindow {
    capacity: u64,
    window: Duration,
    granted: VecDeque<Duration>,
}

impl GrantWindow {
    /// `capacity` tokens per `window`.
    #[must_use]
    pub fn new(capacity: u64, window: Duration) -> Self {
        Self {
            capacity,
            window,
            granted: VecDeque::new(),
        }
    }

    /// Takes a token at `now` if fewer than `capacity` were granted in the window before it.
    pub fn take(&mut self, now: Duration) -> Grant {
        while self
            .granted
            .front()
            .is_some_and(|&t| now.saturating_sub(t) >= self.window)
        {
            self.granted.pop_front();
        }
        let used = self.granted.len() as u64;
        if used < self.capacity {
            self.granted.push_back(now);
            Grant::Token { used: used + 1 }
        } else {
            Grant::Spent { used }
        }
    }

    /// Tokens per window.
    #[must_use]
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The window.
    #[must_use]
    pub fn window(&self) -> Duration {
        self.window
    }
}

/// A budget kept in this process: a [`GrantWindow`] on Tokio's clock. For a single instance,
/// or tests.
#[derive(Debug)]
pub struct InProcessBudget {
    clock: Clock,
    grants: Mutex<GrantWindow>,
}

impl InProcessBudget {
    /// `capacity` tokens per `window`.
    #[must_use]
    pub fn new(capacity: u64, window: Duration) -> Self {
        Self {
            clock: Clock::tokio(),
            grants: Mutex::new(GrantWindow::new(capacity, window)),
        }
    }

    /// The clock it is told the time by: pass [`Registry::clock`](status_core::Registry::clock)
    /// so that its times lie on the registry's axis with every other mechanism's. Default:
    /// a Tokio clock of its own.
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }
}

impl Budget for InProcessBudget {
    fn take(&self) -> Asking<'_> {
        let now = self.clock.elapsed();
        let grant = lock(&self.grants).take(now);
        Box::pin(std::future::ready(Ok(grant)))
    }

    fn describe(&self) -> String {
        let grants = lock(&self.grants);
        format!(
            "in-process sliding window, {} per {} s",
            grants.capacity(),
            grants.window().as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn at_most_capacity_in_any_window() {
        let budget = InProcessBudget::new(2, Duration::from_secs(10));
        assert_eq!(budget.take().await, Ok(Grant::Token { used: 1 }));
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(budget.take().await, Ok(Grant::Token { used: 2 }));
        assert_eq!(budget.take().await, Ok(Grant::Spent { used: 2 }));
        // The first grant leaves the window at 10 s, the second at 16 s.
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(budget.take().await, Ok(Grant::Token { used: 2 }));
        assert_eq!(budget.take().await, Ok(Grant::Spent { used: 2 }));
    }
}
