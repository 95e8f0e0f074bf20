//! The server's clock as this process reads it: each answer says the server's time, and
//! this process's monotonic clock counts on from there, so that a beat can carry a deadline
//! on the server's clock that a jump of this host's wall clock does not move.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The last server time heard, and when (this process's monotonic clock).
#[derive(Debug, Default)]
pub(super) struct ServerClock {
    heard: Mutex<Option<(u64, Instant)>>,
}

impl ServerClock {
    /// The server said `now_ms` (its time, in ms since the epoch) just now.
    pub(super) fn heard(&self, now_ms: u64) {
        *crate::sync::lock(&self.heard) = Some((now_ms, Instant::now()));
    }

    /// The server's time `within` from now, in ms: the deadline of a call sent now, after
    /// which the server must not act on it. 0 (no deadline) before anything was heard.
    pub(super) fn deadline(&self, within: Duration) -> u64 {
        let heard = *crate::sync::lock(&self.heard);
        heard.map_or(0, |(ms, at)| {
            let ahead = at.elapsed() + within;
            ms.saturating_add(u64::try_from(ahead.as_millis()).unwrap_or(u64::MAX))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_deadline_until_the_server_is_heard_then_its_time_plus_the_wait() {
        let clock = ServerClock::default();
        assert_eq!(clock.deadline(Duration::from_millis(500)), 0);
        clock.heard(1_000_000);
        let deadline = clock.deadline(Duration::from_millis(500));
        // Counted on by this process's clock: at least the wait, never much more.
        assert!((1_000_500..1_001_500).contains(&deadline), "{deadline}");
    }
}
