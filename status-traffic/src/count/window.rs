//! Failures over a sliding window, one slot a second: O(window) memory, however many fail.

use std::time::Duration;

/// Failures counted in per-second slots over the last `window` seconds, told the time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureWindow {
    /// `(second, failures in it)`, indexed by second modulo the window.
    slots: Vec<(u64, u64)>,
}

impl FailureWindow {
    /// A window of `window` (whole seconds, at least one).
    #[must_use]
    pub fn new(window: Duration) -> Self {
        let seconds = usize::try_from(window.as_secs().max(1)).unwrap_or(usize::MAX);
        Self {
            slots: vec![(u64::MAX, 0); seconds],
        }
    }

    /// Counts `n` failures at `now`.
    pub fn record(&mut self, now: Duration, n: u64) {
        let second = now.as_secs();
        let len = self.slots.len() as u64;
        let slot = &mut self.slots[(second % len) as usize];
        if slot.0 != second {
            *slot = (second, 0);
        }
        slot.1 += n;
    }

    /// Failures in the last window at `now`: the current second and the `window - 1` before.
    #[must_use]
    pub fn count(&self, now: Duration) -> u64 {
        let second = now.as_secs();
        let len = self.slots.len() as u64;
        self.slots
            .iter()
            .filter(|(s, _)| *s != u64::MAX && *s <= second && second - s < len)
            .map(|(_, n)| n)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn failures_leave_the_window_a_second_at_a_time() {
        let mut w = FailureWindow::new(60 * S);
        w.record(S, 5);
        w.record(30 * S, 2);
        w.record(30 * S + Duration::from_millis(500), 1);
        assert_eq!(w.count(30 * S), 8);
        assert_eq!(w.count(60 * S), 8);
        assert_eq!(w.count(61 * S), 3, "the second-1 slot left");
        assert_eq!(w.count(90 * S), 0);
        // A slot reused a window later starts from zero.
        w.record(121 * S, 4);
        assert_eq!(w.count(121 * S), 4);
    }

    #[test]
    fn memory_is_the_window_not_the_failures() {
        let mut w = FailureWindow::new(10 * S);
        for ms in 0..100_000u64 {
            w.record(Duration::from_millis(ms), 1);
        }
        assert_eq!(w.slots.len(), 10);
        assert_eq!(w.count(Duration::from_millis(99_999)), 10_000);
    }
}
