//! Uptime and SLA over a window, from the buckets of one tier: pure arithmetic, held
//! against a brute-force replay of the transitions by the property tests.

use chrono::{DateTime, Duration, Utc};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;
use status_core::CheckStatus;

use crate::model::{Bucket, Series, Spent, Tier};
use crate::{Error, Retention};

/// What a minute in each level counts toward the SLA: OK and MINOR count as up, MAJOR as
/// half up (a partial outage: the dependency answers, slowly or in part), OUTAGE as down.
/// Muted time and time in a maintenance window count for nothing: they are left out of the
/// SLA, and shown apart.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Weights {
    /// What a millisecond of OK counts (1.0).
    pub ok: f64,
    /// What a millisecond of MINOR counts (1.0).
    pub minor: f64,
    /// What a millisecond of MAJOR counts (0.5).
    pub major: f64,
    /// What a millisecond of OUTAGE counts (0.0).
    pub outage: f64,
}

impl Weights {
    /// OK 1, MINOR 1, MAJOR ½, OUTAGE 0.
    pub const DEFAULT: Weights = Weights {
        ok: 1.0,
        minor: 1.0,
        major: 0.5,
        outage: 0.0,
    };
}

impl Default for Weights {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The longest span [`span`] reads: 400 days.
pub const MAX_SPAN_DAYS: i64 = 400;

/// A span back from now as people write it, the one reading of it every surface shares (the
/// badges' `?window=`, MCP's `window`): a positive whole number and `m`, `h` or `d` (`90m`,
/// `24h`, `30d`), surrounding spaces ignored, at most [`MAX_SPAN_DAYS`] days.
///
/// # Errors
///
/// [`Error::is_invalid`], saying what a span is, for anything else.
pub fn span(text: &str) -> Result<chrono::Duration, Error> {
    let trimmed = text.trim();
    let refuse = || {
        let shown: String = trimmed.chars().take(32).collect();
        Error::invalid(format!(
            "a span is a whole number of minutes, hours or days, such as 90m, 24h or 30d, up \
             to {MAX_SPAN_DAYS}d; not {shown:?}"
        ))
    };
    let unit = trimmed.chars().last().ok_or_else(refuse)?;
    let digits = &trimmed[..trimmed.len() - unit.len_utf8()];
    let n: i64 = Some(digits)
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse().ok())
        .filter(|n| *n > 0)
        .ok_or_else(refuse)?;
    match unit {
        'd' => chrono::Duration::try_days(n),
        'h' => chrono::Duration::try_hours(n),
        'm' => chrono::Duration::try_minutes(n),
        _ => None,
    }
    .filter(|d| *d <= chrono::Duration::days(MAX_SPAN_DAYS))
    .ok_or_else(refuse)
}

/// A window asked for, aligned to the buckets of the tier that covers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Its start, at a bucket's start.
    pub from: DateTime<Utc>,
    /// Its end (excluded), at a bucket's start.
    pub to: DateTime<Utc>,
    /// The tier read: the finest still kept at `from`.
    pub tier: Tier,
}

impl Window {
    /// The window from `from` to `to` asked at `now`: read from minutes when `from` is
    /// within the minutes kept, hours within the hours kept, days otherwise; widened to
    /// whole buckets (`from` down, `to` up).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `to` is not after `from`, `from` is after `now`, or the
    /// window starts before the days kept.
    pub fn new(
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        now: DateTime<Utc>,
        retention: &Retention,
    ) -> Result<Self, Error> {
        if to <= from {
            return Err(Error::invalid("`to` must be after `from`"));
        }
        if from > now {
            return Err(Error::invalid("`from` is in the future"));
        }
        let age = now - from;
        let kept = |d: std::time::Duration| Duration::from_std(d).unwrap_or(Duration::MAX);
        let tier = if age <= kept(retention.minutes) {
            Tier::Minute
        } else if age <= kept(retention.hours) {
            Tier::Hour
        } else if age <= kept(retention.days) {
            Tier::Day
        } else {
            return Err(Error::invalid(format!(
                "`from` is before the {} days kept",
                retention.days.as_secs() / 86_400
            )));
        };
        let to = to.min(now);
        Ok(Self {
            from: tier.floor(from),
            to: tier.ceil(to).max(tier.floor(from) + tier.length()),
            tier,
        })
    }
}

/// Check durations over a window, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Durations {
    /// The quickest.
    pub min: f64,
    /// The mean.
    pub mean: f64,
    /// The slowest.
    pub max: f64,
}

/// The share of a window spent in each level, uptime and SLA.
#[derive(Debug, Clone, PartialEq)]
pub struct UptimeReport {
    /// The series.
    pub series: Series,
    /// The window read.
    pub window: Window,
    /// Time in each level, in milliseconds; muted apart.
    pub spent: Spent,
    /// The share of unmuted observed time not in OUTAGE; `None` with none observed.
    pub uptime: Option<f64>,
    /// The weighted share ([`Weights`]); `None` with none observed.
    pub sla: Option<f64>,
    /// The weights used.
    pub weights: Weights,
    /// Checks in the window (dependencies only).
    pub checks: u64,
    /// Of those, failed.
    pub failures: u64,
    /// Their durations, with at least one check.
    pub durations: Option<Durations>,
}

impl UptimeReport {
    /// Sums `buckets` (of `window`'s tier, inside it) into a report.
    #[must_use]
    pub fn of(series: Series, window: Window, buckets: &[Bucket], weights: Weights) -> Self {
        let mut total = Bucket::empty(window.from.timestamp());
        for b in buckets {
            total.merge(b);
        }
        let spent = total.spent;
        let observed = spent.unmuted();
        #[allow(clippy::cast_precision_loss)] // far below 2^52 ms
        let share = |weighted: f64| (observed > 0).then(|| weighted / observed as f64);
        #[allow(clippy::cast_precision_loss)]
        let (ok, minor, major, outage) = (
            spent.ok as f64,
            spent.minor as f64,
            spent.major as f64,
            spent.outage as f64,
        );
        #[allow(clippy::cast_precision_loss)]
        let durations = (total.checks > 0).then(|| Durations {
            min: total.duration_min_us as f64 / 1000.0,
            mean: total.duration_sum_us as f64 / total.checks as f64 / 1000.0,
            max: total.duration_max_us as f64 / 1000.0,
        });
        Self {
            series,
            window,
            spent,
            uptime: share(ok + minor + major),
            sla: share(
                weights.ok * ok
                    + weights.minor * minor
                    + weights.major * major
                    + weights.outage * outage,
            ),
            weights,
            checks: total.checks,
            failures: total.failures,
            durations,
        }
    }
}

impl Serialize for UptimeReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("UptimeReport", 12)?;
        s.serialize_field("kind", self.series.kind())?;
        s.serialize_field("name", self.series.name())?;
        s.serialize_field("from", &iso(self.window.from))?;
        s.serialize_field("to", &iso(self.window.to))?;
        s.serialize_field("resolution", &self.window.tier)?;
        s.serialize_field("observedMs", &self.spent.unmuted())?;
        s.serialize_field("spentMs", &self.spent)?;
        s.serialize_field("uptime", &self.uptime)?;
        s.serialize_field("sla", &self.sla)?;
        s.serialize_field("weights", &self.weights)?;
        s.serialize_field("checks", &self.checks)?;
        s.serialize_field("failures", &self.failures)?;
        s.serialize_field("durationMs", &self.durations)?;
        s.end()
    }
}

/// One day of a series: its worst level, its uptime.
#[derive(Debug, Clone, PartialEq)]
pub struct DayTile {
    /// The day (UTC).
    pub day: DateTime<Utc>,
    /// The worst level it spent time in, unmuted; `None` with nothing observed.
    pub worst: Option<CheckStatus>,
    /// Its uptime, as [`UptimeReport::uptime`].
    pub uptime: Option<f64>,
    /// Muted time in it, in milliseconds.
    pub muted_ms: u64,
    /// Time observed in it, not muted, in milliseconds: what its uptime covers.
    pub observed_ms: u64,
}

impl DayTile {
    /// The tile of the day bucket `bucket`.
    #[must_use]
    pub fn of(bucket: &Bucket) -> Self {
        let s = bucket.spent;
        let worst = [
            (s.outage, CheckStatus::Outage),
            (s.major, CheckStatus::Major),
            (s.minor, CheckStatus::Minor),
            (s.ok, CheckStatus::Ok),
        ]
        .into_iter()
        .find(|(ms, _)| *ms > 0)
        .map(|(_, level)| level);
        let observed = s.unmuted();
        #[allow(clippy::cast_precision_loss)]
        let uptime = (observed > 0).then(|| (observed - s.outage) as f64 / observed as f64);
        Self {
            day: bucket.start_time(),
            worst,
            uptime,
            muted_ms: s.muted,
            observed_ms: observed,
        }
    }
}

impl Serialize for DayTile {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("DayTile", 5)?;
        s.serialize_field("day", &self.day.format("%Y-%m-%d").to_string())?;
        s.serialize_field("worst", &self.worst)?;
        s.serialize_field("uptime", &self.uptime)?;
        s.serialize_field("mutedMs", &self.muted_ms)?;
        s.serialize_field("observedMs", &self.observed_ms)?;
        s.end()
    }
}

pub(crate) fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_a_whole_number_and_a_unit_up_to_400_days() {
        assert_eq!(span("90m").unwrap(), chrono::Duration::minutes(90));
        assert_eq!(span(" 24h ").unwrap(), chrono::Duration::hours(24));
        assert_eq!(span("400d").unwrap(), chrono::Duration::days(400));
        for bad in [
            "",
            "d",
            "0d",
            "-1d",
            "401d",
            "1w",
            "1.5h",
            "+1d",
            "99999999999999999d",
            "1é",
            "é",
        ] {
            let e = span(bad).unwrap_err();
            assert!(
                e.is_invalid() && e.to_string().contains("30d"),
                "{bad:?}: {e}"
            );
        }
    }
}
