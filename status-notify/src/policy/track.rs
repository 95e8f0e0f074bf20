//! What the policy knows of one dependency, or of the system: the level told, the level
//! held and since when.

use std::time::Duration;

use status_core::{CheckStatus, DependencyId};

/// What the policy knows of one dependency, or of the system.
#[derive(Debug, Clone)]
pub(super) struct Track {
    /// The level last told.
    pub(super) told: CheckStatus,
    /// The level it holds now, and since when.
    pub(super) level: CheckStatus,
    pub(super) since: Duration,
    /// Whether "flapping" was told and not yet taken back by a stable level.
    pub(super) flapping_told: bool,
    pub(super) flapping: bool,
    pub(super) blocked_by: Vec<DependencyId>,
    /// Under maintenance (muted, or failing only through muted root causes, as the
    /// registry's facts say): followed, never told, not even as told.
    pub(super) maintenance: bool,
    /// At MINOR only because hysteresis is ramping towards its real status (failure k of n):
    /// not told on its own; the level the ramp reaches is, its hold counted from the ramp's
    /// start.
    pub(super) ramping: bool,
}

impl Track {
    pub(super) fn new(level: CheckStatus, now: Duration) -> Self {
        Self {
            told: CheckStatus::Ok,
            level,
            since: now,
            flapping_told: false,
            flapping: false,
            blocked_by: Vec::new(),
            maintenance: false,
            ramping: false,
        }
    }

    /// Sees `level` at `now`, `ramping` if it is a hysteresis ramp's MINOR.
    pub(super) fn see(&mut self, level: CheckStatus, ramping: bool, now: Duration) {
        if level != self.level {
            // The level a ramp reaches began with the ramp: its hold is not counted again.
            let ramp_ended_worse = self.ramping && level.is_worse_than(self.level);
            self.level = level;
            if !ramp_ended_worse {
                self.since = now;
            }
        }
        self.ramping = ramping && level == CheckStatus::Minor;
    }

    /// Whether the level held long enough, differs from what was told, and is not a ramp's
    /// way to a worse one.
    pub(super) fn due(&self, hold: Duration, now: Duration) -> bool {
        self.level != self.told && !self.ramping && now.saturating_sub(self.since) >= hold
    }
}
