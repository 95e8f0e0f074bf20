//! Service level objectives over the exact history: what an objective is ([`Objective`]),
//! what it reports ([`SloReport`]: bad time, the error budget, burn rates), and the SRE
//! workbook's multiwindow, multi-burn-rate alerts ([`ALERT_RULES`], [`Alarms`]). Pure: told
//! the time spent in each level over each window, no clock and no store; [`History::slo`]
//! reads the buckets.
//!
//! [`History::slo`]: crate::History::slo

mod alarm;
mod report;
mod target;
mod windows;

use std::fmt;
use std::str::FromStr;

use chrono::Duration;
use status_core::CheckStatus;

use crate::model::{Series, Spent};
use crate::uptime::span;
use crate::Error;

pub use self::alarm::{AlarmChange, Alarms};
pub use self::report::{AlertState, Budget, Burned, SloReport};
pub use self::target::{check, parse_target, target_text};
pub use self::windows::{spent_in, Windows};

/// The longest name an objective takes.
pub const MAX_SLO_NAME: usize = 64;

/// A window a burn rate is read over, as the SRE workbook sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BurnWindow {
    /// As written: `5m`, `1h`, `3d`.
    pub name: &'static str,
    /// Its length in minutes.
    pub minutes: i64,
}

impl BurnWindow {
    /// Its length.
    #[must_use]
    pub fn length(self) -> Duration {
        Duration::minutes(self.minutes)
    }
}

/// The windows burn rates are read over: 5m, 30m, 1h, 6h, 1d and 3d.
pub const BURN_WINDOWS: [BurnWindow; 6] = [
    BurnWindow {
        name: "5m",
        minutes: 5,
    },
    BurnWindow {
        name: "30m",
        minutes: 30,
    },
    BurnWindow {
        name: "1h",
        minutes: 60,
    },
    BurnWindow {
        name: "6h",
        minutes: 360,
    },
    BurnWindow {
        name: "1d",
        minutes: 1_440,
    },
    BurnWindow {
        name: "3d",
        minutes: 4_320,
    },
];

/// How urgent an alert is: a page wakes someone, a ticket waits for the day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Someone is woken: the budget burns fast.
    Page,
    /// Someone looks in working hours: the budget burns steadily.
    Ticket,
}

impl Severity {
    /// `page` or `ticket`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Page => "page",
            Self::Ticket => "ticket",
        }
    }
}

/// One of the workbook's alerts: it fires while the burn rate is over `factor` in both its
/// long and its short window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlertRule {
    /// How urgent.
    pub severity: Severity,
    /// The long window (one of [`BURN_WINDOWS`]).
    pub long: &'static str,
    /// The short window, which ends the alert soon after the burning stops.
    pub short: &'static str,
    /// The burn rate both must be over.
    pub factor: f64,
}

/// The SRE workbook's multiwindow, multi-burn-rate alerts: a page at 14.4 over 1h and 5m (2 %
/// of a 30-day budget in an hour) or at 6 over 6h and 30m (5 % in six hours); a ticket at 1
/// over 3d and 6h.
pub const ALERT_RULES: [AlertRule; 3] = [
    AlertRule {
        severity: Severity::Page,
        long: "1h",
        short: "5m",
        factor: 14.4,
    },
    AlertRule {
        severity: Severity::Page,
        long: "6h",
        short: "30m",
        factor: 6.0,
    },
    AlertRule {
        severity: Severity::Ticket,
        long: "3d",
        short: "6h",
        factor: 1.0,
    },
];

/// A service level objective: the share of observed time `target` must not spend at
/// `bad_from` or worse, over a rolling window. Muted time and excluded windows are not
/// observed: they count as neither good nor bad.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    name: String,
    target: Series,
    objective: f64,
    window: Duration,
    window_text: String,
    bad_from: CheckStatus,
}

impl Objective {
    /// `name`: `target` good for `objective` (a ratio in (0, 1), 0.999) of the observed time
    /// over the last `window` (`1h` to `400d`, as [`span`] reads it); bad from MAJOR.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`], naming what is wrong: a name that is blank, too long or not
    /// made of lowercase letters, digits, `-`, `_` and `.`; an objective outside (0, 1); a
    /// window that is not one, or shorter than an hour.
    pub fn new(name: &str, target: Series, objective: f64, window: &str) -> Result<Self, Error> {
        let shown: String = name.chars().take(MAX_SLO_NAME).collect();
        if name.is_empty()
            || name.len() > MAX_SLO_NAME
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
        {
            return Err(Error::invalid(format!(
                "an objective's name is 1 to {MAX_SLO_NAME} lowercase letters, digits, `-`, `_` \
                 or `.`; not {shown:?}"
            )));
        }
        if !(objective > 0.0 && objective < 1.0) {
            return Err(Error::invalid(format!(
                "objective {shown:?}: its objective is a share strictly between 0 and 100 %, \
                 not {objective}"
            )));
        }
        let length =
            span(window).map_err(|e| Error::invalid(format!("objective {shown:?}: {e}")))?;
        if length < Duration::hours(1) {
            return Err(Error::invalid(format!(
                "objective {shown:?}: its window is from 1h to 400d, not {}",
                window.trim()
            )));
        }
        Ok(Self {
            name: name.to_owned(),
            target,
            objective,
            window: length,
            window_text: window.trim().to_owned(),
            bad_from: CheckStatus::Major,
        })
    }

    /// Counts time bad from `level` (MINOR, MAJOR or OUTAGE) rather than MAJOR.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for OK: time at OK is never bad.
    pub fn bad_from(mut self, level: CheckStatus) -> Result<Self, Error> {
        if level == CheckStatus::Ok {
            return Err(Error::invalid(format!(
                "objective {:?}: time is bad from MINOR, MAJOR or OUTAGE, never from OK",
                self.name
            )));
        }
        self.bad_from = level;
        Ok(self)
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it is about.
    #[must_use]
    pub fn target(&self) -> &Series {
        &self.target
    }

    /// The share of observed time that must be good (0.999).
    #[must_use]
    pub fn objective(&self) -> f64 {
        self.objective
    }

    /// The rolling window.
    #[must_use]
    pub fn window(&self) -> Duration {
        self.window
    }

    /// The rolling window as written (`30d`).
    #[must_use]
    pub fn window_text(&self) -> &str {
        &self.window_text
    }

    /// The level from which time is bad.
    #[must_use]
    pub fn bad_level(&self) -> CheckStatus {
        self.bad_from
    }

    /// Of `spent`, the milliseconds that are bad (muted time never is).
    #[must_use]
    pub fn bad(&self, spent: &Spent) -> u64 {
        [
            (CheckStatus::Minor, spent.minor),
            (CheckStatus::Major, spent.major),
            (CheckStatus::Outage, spent.outage),
        ]
        .into_iter()
        .filter(|(level, _)| *level >= self.bad_from)
        .map(|(_, ms)| ms)
        .sum()
    }

    /// Whether the burn rate `bad` of `observed` is over `factor`: the bad share over
    /// `factor × (1 − objective)`, computed as Prometheus's rules compute it, so that both
    /// agree to the last bit.
    #[must_use]
    pub fn burns_over(&self, bad: u64, observed: u64, factor: f64) -> bool {
        #[allow(clippy::cast_precision_loss)] // far below 2^52 ms
        let share = bad as f64 / observed as f64;
        observed > 0 && share > factor * (1.0 - self.objective)
    }
}

impl FromStr for Objective {
    type Err = Error;

    /// `NAME=TARGET@OBJECTIVE/WINDOW`, the objective in percent: `db=dependency:primary-db@99.9/30d`.
    fn from_str(spec: &str) -> Result<Self, Error> {
        let shown: String = spec.chars().take(96).collect();
        let refuse = |why: &str| {
            Error::invalid(format!(
                "an objective is NAME=TARGET@OBJECTIVE/WINDOW, such as \
                 db=dependency:primary-db@99.9/30d ({why}); not {shown:?}"
            ))
        };
        let (name, rest) = spec.split_once('=').ok_or_else(|| refuse("no `=`"))?;
        let (target, rest) = rest.rsplit_once('@').ok_or_else(|| refuse("no `@`"))?;
        let (percent, window) = rest.split_once('/').ok_or_else(|| refuse("no `/`"))?;
        let ratio = ratio_of_percent(percent.trim())
            .ok_or_else(|| refuse("the objective is a percentage, such as 99.9"))?;
        let target = parse_target(target)?;
        Objective::new(name.trim(), target, ratio, window)
    }
}

/// `99.9` as the ratio 0.999 exactly as `0.999` reads (not `99.9 / 100`, a bit above):
/// whole digits, optionally a point and more digits.
fn ratio_of_percent(text: &str) -> Option<f64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || whole.len() + fraction.len() > 15
    {
        return None;
    }
    let scaled: f64 = format!("{whole}{fraction}").parse().ok()?;
    let places = i32::try_from(fraction.len()).ok()? + 2;
    Some(scaled / 10f64.powi(places))
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={}@{}/{}",
            self.name,
            target_text(&self.target),
            self.objective * 100.0,
            self.window_text
        )
    }
}

#[cfg(test)]
mod tests;
