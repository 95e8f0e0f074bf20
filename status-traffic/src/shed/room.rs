//! The waiting room's policy, pure: bounded, highest priority first; within a priority, first
//! come first served until the queue is congested, then last come first served (adaptive
//! LIFO). Told the time; holds whatever its driver needs to wake a waiter.

use std::collections::VecDeque;
use std::time::Duration;

/// The queue of a [shedding layer](super::ShedLayer) as a state machine: who waits, in what
/// order they are served, and who is refused when it is full. The layer keeps one behind a
/// lock with a channel per waiter; the simulator keeps one with request ids. When a waiter's
/// time runs out is [`expiry`]'s rule, and who has run out at a moment is
/// [`expire`](Self::expire)'s answer: both drivers call them, before they hand out capacity
/// and when a waiter's timer fires.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use status_traffic::shed::WaitingRoom;
///
/// let ms = Duration::from_millis;
/// let mut room = WaitingRoom::new(2, Some(ms(250)));
/// assert!(room.enter("a", 0, ms(0)).is_ok());
/// assert!(room.enter("b", 0, ms(10)).is_ok());
/// // Full: a request of the same priority is refused, one of higher priority takes the place
/// // of the lowest.
/// assert_eq!(room.enter("c", 0, ms(20)), Err("c"));
/// assert_eq!(room.enter("d", 1, ms(20)), Ok(Some("b")));
/// assert_eq!(room.next(ms(30)), Some("d"));
/// // "a" has waited over 250 ms: newest first, but it is alone.
/// assert_eq!(room.next(ms(300)), Some("a"));
/// ```
#[derive(Debug, Clone)]
pub struct WaitingRoom<T> {
    waiting: VecDeque<Waiter<T>>,
    capacity: usize,
    lifo_after: Option<Duration>,
}

#[derive(Debug, Clone)]
struct Waiter<T> {
    priority: u8,
    since: Duration,
    item: T,
}

impl<T> WaitingRoom<T> {
    /// Room for `capacity` waiters; newest first once the oldest of the top priority has
    /// waited longer than `lifo_after` (`None`: always first come, first served).
    #[must_use]
    pub fn new(capacity: usize, lifo_after: Option<Duration>) -> Self {
        Self {
            waiting: VecDeque::new(),
            capacity,
            lifo_after,
        }
    }

    /// Queues `item` of `priority` at `now`, after the last of its priority or higher. When
    /// the room is full, the lowest-priority waiter (the newest of them) gives up its place if
    /// it ranks below `item`: `Ok(Some(evicted))`; otherwise `item` is refused: `Err(item)`.
    pub fn enter(&mut self, item: T, priority: u8, now: Duration) -> Result<Option<T>, T> {
        let mut evicted = None;
        if self.waiting.len() >= self.capacity {
            let lowest = self
                .waiting
                .iter()
                .enumerate()
                .rev()
                .min_by_key(|(_, w)| w.priority)
                .map(|(i, w)| (i, w.priority));
            match lowest {
                Some((i, p)) if p < priority => {
                    evicted = self.waiting.remove(i).map(|w| w.item);
                }
                _ => return Err(item),
            }
        }
        let at = self
            .waiting
            .iter()
            .position(|w| w.priority < priority)
            .unwrap_or(self.waiting.len());
        self.waiting.insert(
            at,
            Waiter {
                priority,
                since: now,
                item,
            },
        );
        Ok(evicted)
    }

    /// The waiter to serve at `now`: the first of the highest priority, or, once that one has
    /// waited longer than `lifo_after`, the last of it. Under a standing queue the newest
    /// requests, whose clients are still waiting, get the capacity; the oldest run out their
    /// queue timeout instead of delaying everyone behind them (Facebook's adaptive LIFO).
    pub fn next(&mut self, now: Duration) -> Option<T> {
        let first = self.waiting.front()?;
        let congested = self
            .lifo_after
            .is_some_and(|after| now.saturating_sub(first.since) > after);
        let waiter = if congested {
            let top = first.priority;
            let last = self
                .waiting
                .iter()
                .rposition(|w| w.priority == top)
                .unwrap_or(0);
            self.waiting.remove(last)
        } else {
            self.waiting.pop_front()
        };
        waiter.map(|w| w.item)
    }

    /// Takes out, oldest first, every waiter that has waited `after` or longer at `now` (see
    /// [`expiry`]): each is to be refused, never started.
    pub fn expire(&mut self, now: Duration, after: Duration) -> Vec<T> {
        let (expired, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|w| now.saturating_sub(w.since) >= after);
        self.waiting = kept.into();
        let mut expired: Vec<_> = expired.into_iter().map(|w| (w.since, w.item)).collect();
        expired.sort_by_key(|(since, _)| *since);
        expired.into_iter().map(|(_, item)| item).collect()
    }

    /// Keeps only the waiters for which `keep` is true (those whose client went away, or
    /// whose time ran out, leave).
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        self.waiting.retain(|w| keep(&w.item));
    }

    /// Waiters now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether nobody waits.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// Why a waiter left the queue without a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expired {
    /// It waited its queue timeout.
    QueueTimeout,
    /// Its deadline came first, while it still waited.
    Deadline,
}

/// How long a waiter may wait, and why it leaves when it has: its queue timeout, or its
/// deadline if that is sooner (a tie is the queue timeout's). The one rule the layer and
/// the simulator both follow.
///
/// ```
/// use std::time::Duration;
/// use status_traffic::shed::{expiry, Expired};
///
/// let s = Duration::from_secs;
/// assert_eq!(expiry(s(1), s(2)), (s(1), Expired::QueueTimeout));
/// assert_eq!(expiry(s(3), s(2)), (s(2), Expired::Deadline));
/// ```
#[must_use]
pub fn expiry(queue_timeout: Duration, deadline: Duration) -> (Duration, Expired) {
    if queue_timeout <= deadline {
        (queue_timeout, Expired::QueueTimeout)
    } else {
        (deadline, Expired::Deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn priorities_first_then_arrival_order() {
        let mut room = WaitingRoom::new(10, None);
        for (item, priority) in [(1, 0), (2, 2), (3, 1), (4, 2), (5, 0)] {
            assert_eq!(room.enter(item, priority, MS), Ok(None));
        }
        let order: Vec<_> = std::iter::from_fn(|| room.next(1000 * MS)).collect();
        assert_eq!(order, [2, 4, 3, 1, 5]);
    }

    #[test]
    fn congested_serves_the_newest_of_the_top_priority() {
        let mut room = WaitingRoom::new(10, Some(250 * MS));
        room.enter(1, 0, Duration::ZERO).unwrap();
        room.enter(2, 0, 100 * MS).unwrap();
        room.enter(3, 0, 200 * MS).unwrap();
        assert_eq!(room.next(250 * MS), Some(1), "not yet congested");
        assert_eq!(
            room.next(351 * MS),
            Some(3),
            "2 waited 251 ms: newest first"
        );
        assert_eq!(room.next(351 * MS), Some(2));
        assert!(room.is_empty());
    }

    #[test]
    fn a_full_room_evicts_only_a_lower_priority() {
        let mut room = WaitingRoom::new(2, None);
        room.enter(1, 1, MS).unwrap();
        room.enter(2, 0, MS).unwrap();
        assert_eq!(room.enter(3, 0, MS), Err(3));
        assert_eq!(room.enter(4, 1, MS), Ok(Some(2)));
        assert_eq!(room.enter(5, 1, MS), Err(5));
        room.retain(|&i| i != 1);
        assert_eq!(room.len(), 1);
        assert_eq!(room.next(MS), Some(4));
    }

    #[test]
    fn expire_takes_out_those_whose_time_ran_out_oldest_first() {
        let mut room = WaitingRoom::new(10, None);
        room.enter("old", 0, Duration::ZERO).unwrap();
        room.enter("vip", 5, 30 * MS).unwrap();
        room.enter("new", 0, 80 * MS).unwrap();
        assert!(room.expire(99 * MS, 100 * MS).is_empty());
        assert_eq!(room.expire(130 * MS, 100 * MS), ["old", "vip"]);
        assert_eq!(room.len(), 1);
        assert_eq!(room.next(130 * MS), Some("new"));
    }
}
