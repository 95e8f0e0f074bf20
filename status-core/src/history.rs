//! Bounded history of a dependency: its transitions and a per-minute record of 24 hours.

use std::collections::VecDeque;

use chrono::{DateTime, TimeZone, Utc};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use crate::text::iso;
use crate::CheckStatus;

/// Minutes kept in the per-minute record: 24 hours.
pub const MINUTES_KEPT: usize = 24 * 60;

/// A change of the reported status of a dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Transition {
    /// When it changed.
    pub at: DateTime<Utc>,
    /// The status before; `None` for the first check.
    pub from: Option<CheckStatus>,
    /// The status after.
    pub to: CheckStatus,
    /// The message of the check that changed it.
    pub message: String,
}

impl Serialize for Transition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Transition", 5)?;
        s.serialize_field("timestamp", &self.at.timestamp_millis())?;
        s.serialize_field("date", &iso(self.at))?;
        s.serialize_field("from", &self.from)?;
        s.serialize_field("to", &self.to)?;
        s.serialize_field("message", &self.message)?;
        s.end()
    }
}

/// What the checks of one minute said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct MinuteRecord {
    /// The start of the minute.
    pub start: DateTime<Utc>,
    /// The worst status reported in the minute.
    pub worst: CheckStatus,
    /// Checks in the minute.
    pub checks: u32,
    /// Checks in the minute whose reported status was better than OUTAGE.
    pub up: u32,
}

impl Serialize for MinuteRecord {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("MinuteRecord", 4)?;
        s.serialize_field("timestamp", &self.start.timestamp_millis())?;
        s.serialize_field("worst", &self.worst)?;
        s.serialize_field("checks", &self.checks)?;
        s.serialize_field("up", &self.up)?;
        s.end()
    }
}

/// One minute packed in 8 bytes: 10,000 dependencies keep 24 hours in about 110 MiB.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Minutes since the Unix epoch.
    minute: u32,
    /// Bits 0..15: checks (saturating); 15..30: checks that were up; 30..32: worst severity.
    packed: u32,
}

const COUNT_BITS: u32 = 15;
const COUNT_MAX: u32 = (1 << COUNT_BITS) - 1;

impl Slot {
    fn checks(self) -> u32 {
        self.packed & COUNT_MAX
    }
    fn up(self) -> u32 {
        (self.packed >> COUNT_BITS) & COUNT_MAX
    }
    fn worst(self) -> CheckStatus {
        #[allow(clippy::cast_possible_truncation)] // two bits
        let severity = (self.packed >> (2 * COUNT_BITS)) as u8;
        CheckStatus::from_severity(severity).unwrap_or(CheckStatus::Outage)
    }
    fn pack(checks: u32, up: u32, worst: CheckStatus) -> u32 {
        checks.min(COUNT_MAX)
            | (up.min(COUNT_MAX) << COUNT_BITS)
            | (u32::from(worst.severity()) << (2 * COUNT_BITS))
    }
}

/// The history of one dependency.
#[derive(Debug)]
pub(crate) struct History {
    transitions: VecDeque<Transition>,
    max_transitions: usize,
    minutes: VecDeque<Slot>,
}

impl History {
    pub(crate) fn new(max_transitions: usize) -> Self {
        Self {
            transitions: VecDeque::new(),
            max_transitions,
            minutes: VecDeque::new(),
        }
    }

    pub(crate) fn record_transition(&mut self, transition: Transition) {
        if self.max_transitions == 0 {
            return;
        }
        if self.transitions.len() == self.max_transitions {
            self.transitions.pop_front();
        }
        self.transitions.push_back(transition);
    }

    pub(crate) fn record_check(&mut self, at: DateTime<Utc>, status: CheckStatus) {
        let minute = minute_of(at);
        let up = u32::from(status != CheckStatus::Outage);
        match self.minutes.back_mut() {
            Some(slot) if slot.minute == minute => {
                let worst = slot.worst().no_better_than(status);
                slot.packed = Slot::pack(slot.checks() + 1, slot.up() + up, worst);
            }
            // A clock that went backwards: count it in the latest minute.
            Some(slot) if slot.minute > minute => {
                let worst = slot.worst().no_better_than(status);
                slot.packed = Slot::pack(slot.checks() + 1, slot.up() + up, worst);
            }
            _ => {
                // Grow by doubling up to exactly a day, not to the next power of two.
                if self.minutes.len() == self.minutes.capacity() {
                    let target = (self.minutes.len() * 2).clamp(16, MINUTES_KEPT);
                    self.minutes
                        .reserve_exact(target.saturating_sub(self.minutes.len()).max(1));
                }
                self.minutes.push_back(Slot {
                    minute,
                    packed: Slot::pack(1, up, status),
                });
            }
        }
        let oldest = minute.saturating_sub(MINUTES_KEPT as u32 - 1);
        while self.minutes.front().is_some_and(|s| s.minute < oldest) {
            self.minutes.pop_front();
        }
    }

    pub(crate) fn transitions(&self) -> Vec<Transition> {
        self.transitions.iter().cloned().collect()
    }

    /// The records of the last `minutes` minutes before `now`, oldest first (minutes with no
    /// check are absent).
    pub(crate) fn minutes(&self, now: DateTime<Utc>, minutes: u32) -> Vec<MinuteRecord> {
        let oldest = minute_of(now).saturating_sub(minutes.saturating_sub(1));
        self.minutes
            .iter()
            .filter(|s| s.minute >= oldest)
            .map(|s| MinuteRecord {
                start: Utc
                    .timestamp_opt(i64::from(s.minute) * 60, 0)
                    .single()
                    .unwrap_or_default(),
                worst: s.worst(),
                checks: s.checks(),
                up: s.up(),
            })
            .collect()
    }

    /// The share of checks that were up in the last `minutes` minutes, if there was any.
    pub(crate) fn uptime(&self, now: DateTime<Utc>, minutes: u32) -> Option<f64> {
        let oldest = minute_of(now).saturating_sub(minutes.saturating_sub(1));
        let (up, checks) = self
            .minutes
            .iter()
            .rev()
            .take_while(|s| s.minute >= oldest)
            .fold((0u64, 0u64), |(up, checks), s| {
                (up + u64::from(s.up()), checks + u64::from(s.checks()))
            });
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        (checks > 0).then(|| up as f64 / checks as f64)
    }
}

fn minute_of(t: DateTime<Utc>) -> u32 {
    u32::try_from(t.timestamp().div_euclid(60)).unwrap_or(0)
}

/// The uptime of a dependency over the last hour and day, from its per-minute record.
///
/// "Up" is any status better than OUTAGE; `None` where no check ran in the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Uptime {
    /// Over the last 60 minutes, from 0.0 to 1.0.
    #[serde(rename = "hour")]
    pub last_hour: Option<f64>,
    /// Over the last 24 hours, from 0.0 to 1.0.
    #[serde(rename = "day")]
    pub last_day: Option<f64>,
}

/// A snapshot of a dependency's history.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct HistorySnapshot {
    /// Uptime over the last hour and day.
    pub uptime: Uptime,
    /// The latest transitions, oldest first.
    pub transitions: Vec<Transition>,
    /// The last hour, minute by minute, oldest first.
    #[serde(rename = "lastHour")]
    pub last_hour: Vec<MinuteRecord>,
}

impl History {
    pub(crate) fn snapshot(&self, now: DateTime<Utc>) -> HistorySnapshot {
        HistorySnapshot {
            uptime: Uptime {
                last_hour: self.uptime(now, 60),
                last_day: self.uptime(now, MINUTES_KEPT as u32),
            },
            transitions: self.transitions(),
            last_hour: self.minutes(now, 60),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn slot_packing_round_trips_and_saturates() {
        let s = Slot {
            minute: 1,
            packed: Slot::pack(40_000, 12, CheckStatus::Major),
        };
        assert_eq!(
            (s.checks(), s.up(), s.worst()),
            (COUNT_MAX, 12, CheckStatus::Major)
        );
        assert_eq!(std::mem::size_of::<Slot>(), 8);
    }

    #[test]
    fn uptime_over_hour_and_day() {
        let mut h = History::new(10);
        // 23 hours ago: an hour of outage, one check a minute.
        for m in 0..60 {
            h.record_check(t0() + Duration::minutes(m), CheckStatus::Outage);
        }
        // The last hour: OK except one MAJOR minute (MAJOR is up).
        let recent = t0() + Duration::hours(23);
        for m in 0..60 {
            let status = if m == 30 {
                CheckStatus::Major
            } else {
                CheckStatus::Ok
            };
            h.record_check(recent + Duration::minutes(m), status);
        }
        let now = recent + Duration::minutes(59);
        assert_eq!(h.uptime(now, 60), Some(1.0));
        assert_eq!(h.uptime(now, MINUTES_KEPT as u32), Some(0.5));
        let minutes = h.minutes(now, 60);
        assert_eq!(minutes.len(), 60);
        assert_eq!(minutes[30].worst, CheckStatus::Major);
        // A day later, the outage has left the record.
        let later = now + Duration::hours(2);
        h.record_check(later, CheckStatus::Ok);
        assert_eq!(h.uptime(later, MINUTES_KEPT as u32), Some(1.0));
        assert!(h.minutes.len() <= MINUTES_KEPT);
    }

    #[test]
    fn transitions_are_bounded() {
        let mut h = History::new(3);
        for i in 0..5 {
            h.record_transition(Transition {
                at: t0(),
                from: None,
                to: CheckStatus::Ok,
                message: i.to_string(),
            });
        }
        let kept: Vec<_> = h.transitions().into_iter().map(|t| t.message).collect();
        assert_eq!(kept, ["2", "3", "4"]);
    }

    #[test]
    fn no_data_means_no_uptime() {
        assert_eq!(History::new(1).uptime(t0(), 60), None);
    }
}
