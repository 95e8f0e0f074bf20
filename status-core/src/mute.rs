//! Mutes and maintenance windows: a dependency whose notices are silenced for a while. A
//! muted dependency is still checked and reported, with its mute; only the notifications it
//! would send are held, and on unmute one notice tells where it stands if that differs from
//! the last one sent.
//!
//! Mutes live in the process: a restart forgets them. They are bounded in number
//! ([`MAX_MUTES`]) and in reach ([`MAX_MUTE_AHEAD`]), and end by themselves.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use tokio::time::Instant;

use crate::text::iso;
use crate::{DependencyId, Error};

/// How many dependencies may be muted (or have a window scheduled) at once.
pub const MAX_MUTES: usize = 256;

/// How far ahead a mute may end: 30 days.
pub const MAX_MUTE_AHEAD: Duration = Duration::from_secs(30 * 24 * 3600);

/// When a mute is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MuteWindow {
    /// From now, for this long.
    For(Duration),
    /// A maintenance window: from `start` (now, if already past) to `end`.
    Between {
        /// When it starts.
        start: DateTime<Utc>,
        /// When it ends.
        end: DateTime<Utc>,
    },
}

/// A mute on one dependency: why, who, and when it is in force.
///
/// Serialized as `{"dependency", "reason", "actor", "setAt", "start", "until", "active"}`,
/// times in RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mute {
    /// The dependency muted.
    pub dependency: DependencyId,
    /// Why.
    pub reason: String,
    /// Who set it, if said.
    pub actor: Option<String>,
    /// When it was set.
    pub set_at: DateTime<Utc>,
    /// When it starts (its setting time, unless scheduled later).
    pub start: DateTime<Utc>,
    /// When it ends.
    pub until: DateTime<Utc>,
    /// Whether it was in force when read (a scheduled window is not, yet).
    pub active: bool,
    pub(crate) starts: Instant,
    pub(crate) ends: Instant,
}

impl Mute {
    /// Validates a mute of `dependency` over `window`, set at `now` (`wall` on the wall
    /// clock).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when the window ends before it starts, has ended, or ends more
    /// than [`MAX_MUTE_AHEAD`] from now; when the time to live is under a second; when the
    /// reason is blank, longer than 1024 characters or not printable; when the actor is not
    /// printable.
    pub(crate) fn new(
        dependency: DependencyId,
        window: MuteWindow,
        reason: &str,
        actor: Option<&str>,
        now: Instant,
        wall: DateTime<Utc>,
    ) -> Result<Self, Error> {
        let (start, until) = match window {
            MuteWindow::For(ttl) => {
                if ttl < Duration::from_secs(1) {
                    return Err(Error::invalid("a mute lasts at least 1 s"));
                }
                // Bounded before any arithmetic: a time to live from outside must never
                // overflow a clock.
                if ttl > MAX_MUTE_AHEAD {
                    return Err(too_far());
                }
                let ttl = chrono::Duration::from_std(ttl).map_err(|_| too_far())?;
                let until = wall.checked_add_signed(ttl).ok_or_else(too_far)?;
                (wall, until)
            }
            MuteWindow::Between { start, end } => {
                if end <= start {
                    return Err(Error::invalid("the window ends before it starts"));
                }
                if end <= wall {
                    return Err(Error::invalid("the window has already ended"));
                }
                (start.max(wall), end)
            }
        };
        let ahead = (until - wall).to_std().unwrap_or(Duration::MAX);
        if ahead > MAX_MUTE_AHEAD {
            return Err(too_far());
        }
        crate::text::reason(reason)?;
        let actor = crate::text::actor(actor)?;
        let offset = |at: DateTime<Utc>| (at - wall).to_std().unwrap_or_default();
        Ok(Self {
            dependency,
            reason: reason.trim().to_owned(),
            actor,
            set_at: wall,
            start,
            until,
            active: start <= wall,
            starts: now + offset(start),
            ends: now + offset(until),
        })
    }

    /// Whether it is in force at `now`.
    #[must_use]
    pub fn in_force(&self, now: Instant) -> bool {
        self.starts <= now && now < self.ends
    }

    /// Whether it has ended at `now`.
    pub(crate) fn is_over(&self, now: Instant) -> bool {
        now >= self.ends
    }

    /// The mute as seen at `now` (`active` set).
    pub(crate) fn at(&self, now: Instant) -> Self {
        Self {
            active: self.in_force(now),
            ..self.clone()
        }
    }
}

fn too_far() -> Error {
    Error::invalid("the mute must end within 30 days (2592000 seconds) from now")
}

impl Serialize for Mute {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Mute", 7)?;
        s.serialize_field("dependency", &self.dependency)?;
        s.serialize_field("reason", &self.reason)?;
        s.serialize_field("actor", &self.actor)?;
        s.serialize_field("setAt", &iso(self.set_at))?;
        s.serialize_field("start", &iso(self.start))?;
        s.serialize_field("until", &iso(self.until))?;
        s.serialize_field("active", &self.active)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn mute(window: MuteWindow) -> Result<Mute, Error> {
        let id = DependencyId::new("db").unwrap();
        Mute::new(id, window, "upgrade", Some("ops"), Instant::now(), at(0))
    }

    #[test]
    fn windows_are_checked_before_anything_is_set() {
        let between = |start, end| MuteWindow::Between {
            start: at(start),
            end: at(end),
        };
        let day = 24 * 3600;
        assert!(mute(between(100, 50)).unwrap_err().is_invalid());
        assert!(mute(between(100, 100)).unwrap_err().is_invalid());
        assert!(mute(between(-100, -10)).unwrap_err().is_invalid());
        assert!(mute(between(0, 31 * day)).unwrap_err().is_invalid());
        assert!(mute(MuteWindow::For(Duration::ZERO))
            .unwrap_err()
            .is_invalid());
        assert!(mute(MuteWindow::For(MAX_MUTE_AHEAD + Duration::from_secs(1))).is_err());
        assert!(mute(MuteWindow::For(Duration::MAX)).is_err());
        // Past what a clock can add: refused, never a panic.
        assert!(
            mute(MuteWindow::For(Duration::from_secs(9_000_000_000_000)))
                .unwrap_err()
                .is_invalid()
        );
        let far = DateTime::<Utc>::MAX_UTC;
        assert!(mute(MuteWindow::Between {
            start: far - chrono::Duration::days(1),
            end: far
        })
        .unwrap_err()
        .is_invalid());
        assert!(mute(between(0, 30 * day)).is_ok());
    }

    #[test]
    fn a_window_in_the_future_is_scheduled_and_one_begun_starts_now() {
        let later = mute(MuteWindow::Between {
            start: at(60),
            end: at(120),
        })
        .unwrap();
        assert!(!later.active);
        assert!(!later.in_force(later.starts - Duration::from_secs(1)));
        assert!(later.in_force(later.starts));
        assert!(!later.in_force(later.ends));
        assert_eq!(later.ends - later.starts, Duration::from_secs(60));

        let begun = mute(MuteWindow::Between {
            start: at(-60),
            end: at(60),
        })
        .unwrap();
        assert!(begun.active);
        assert_eq!(begun.start, at(0));
    }
}
