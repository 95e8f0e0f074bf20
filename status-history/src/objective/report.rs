//! What an objective reports: bad time, the budget, burn rates and alerts, from the time
//! spent in each level over its window and each burn window.

use chrono::{DateTime, Utc};
use serde::ser::{SerializeMap, SerializeStruct, Serializer};
use serde::Serialize;

use super::{target_text, AlertRule, Objective, Severity, ALERT_RULES, BURN_WINDOWS};
use crate::model::{Series, Spent};
use crate::uptime::iso;

/// The error budget: the bad time the objective allows over what was observed, and what is
/// left of it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Bad time allowed: `(1 − objective) × observed`, in whole milliseconds.
    pub allowed_ms: u64,
    /// Bad time spent.
    pub spent_ms: u64,
    /// What is left, as a share of the budget: 1 untouched, 0 spent, below 0 overspent.
    pub remaining: f64,
}

/// One alert of [`ALERT_RULES`] as it stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertState {
    /// How urgent.
    pub severity: Severity,
    /// Its long window.
    pub long: &'static str,
    /// Its short window.
    pub short: &'static str,
    /// The burn rate both windows must be over.
    pub factor: f64,
    /// Whether it fires now.
    pub firing: bool,
    /// Since when it fires, as first seen by this process's alarms or kept across a restart.
    #[serde(serialize_with = "iso_opt")]
    pub since: Option<DateTime<Utc>>,
}

#[allow(clippy::ref_option)] // serde's signature
fn iso_opt<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    t.map(iso).serialize(s)
}

/// Bad and observed time over one burn window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burned {
    /// The window's name (`5m`).
    pub window: &'static str,
    /// Bad milliseconds in it.
    pub bad_ms: u64,
    /// Observed milliseconds in it.
    pub observed_ms: u64,
}

/// What an objective reports at a moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SloReport {
    /// The objective.
    pub objective: Objective,
    /// When it was read.
    pub at: DateTime<Utc>,
    /// Time observed over its window (not muted, not excluded).
    pub observed_ms: u64,
    /// Of that, bad.
    pub bad_ms: u64,
    /// The error budget.
    pub budget: Budget,
    /// Bad and observed time over each of [`BURN_WINDOWS`], in that order.
    pub burned: Vec<Burned>,
    /// Each of [`ALERT_RULES`], in that order.
    pub alerts: Vec<AlertState>,
}

impl SloReport {
    /// The report of `objective` at `at`, from the time spent over its window (`spent`) and
    /// over each of [`BURN_WINDOWS`] in order (`burns`). Alerts fire by the burn rates alone;
    /// their `since` is [`Alarms`](super::Alarms)'s to fill.
    #[must_use]
    pub fn of(objective: &Objective, at: DateTime<Utc>, spent: &Spent, burns: &[Spent]) -> Self {
        let observed = spent.unmuted();
        let bad = objective.bad(spent);
        #[allow(clippy::cast_precision_loss)]
        let allowed = (1.0 - objective.objective()) * observed as f64;
        #[allow(clippy::cast_precision_loss)]
        let remaining = if observed == 0 {
            1.0
        } else {
            1.0 - bad as f64 / allowed
        };
        let burned: Vec<Burned> = BURN_WINDOWS
            .iter()
            .zip(burns)
            .map(|(w, spent)| Burned {
                window: w.name,
                bad_ms: objective.bad(spent),
                observed_ms: spent.unmuted(),
            })
            .collect();
        let over = |window: &str, factor: f64| {
            burned
                .iter()
                .find(|b| b.window == window)
                .is_some_and(|b| objective.burns_over(b.bad_ms, b.observed_ms, factor))
        };
        let alerts = ALERT_RULES
            .iter()
            .map(|rule: &AlertRule| AlertState {
                severity: rule.severity,
                long: rule.long,
                short: rule.short,
                factor: rule.factor,
                firing: over(rule.long, rule.factor) && over(rule.short, rule.factor),
                since: None,
            })
            .collect();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let allowed_ms = allowed.floor() as u64;
        Self {
            objective: objective.clone(),
            at,
            observed_ms: observed,
            bad_ms: bad,
            budget: Budget {
                allowed_ms,
                spent_ms: bad,
                remaining,
            },
            burned,
            alerts,
        }
    }

    /// The burn rate over `window` (`1h`): the bad share of the time observed in it over
    /// `1 − objective`; `None` with nothing observed in it.
    #[must_use]
    pub fn burn_rate(&self, window: &str) -> Option<f64> {
        let b = self.burned.iter().find(|b| b.window == window)?;
        #[allow(clippy::cast_precision_loss)]
        (b.observed_ms > 0)
            .then(|| b.bad_ms as f64 / b.observed_ms as f64 / (1.0 - self.objective.objective()))
    }

    /// Whether an alert of `severity` fires.
    #[must_use]
    pub fn firing(&self, severity: Severity) -> bool {
        self.alerts
            .iter()
            .any(|a| a.severity == severity && a.firing)
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        self.objective.name()
    }

    /// Its target.
    #[must_use]
    pub fn target(&self) -> &Series {
        self.objective.target()
    }
}

struct BurnRates<'a>(&'a SloReport);

impl Serialize for BurnRates<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.burned.len()))?;
        for b in &self.0.burned {
            map.serialize_entry(b.window, &self.0.burn_rate(b.window))?;
        }
        map.end()
    }
}

impl Serialize for SloReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = &self.objective;
        let mut s = serializer.serialize_struct("SloReport", 11)?;
        s.serialize_field("name", o.name())?;
        s.serialize_field("target", &target_text(o.target()))?;
        s.serialize_field("objective", &o.objective())?;
        s.serialize_field("window", o.window_text())?;
        s.serialize_field("badFrom", &o.bad_level())?;
        s.serialize_field("at", &iso(self.at))?;
        s.serialize_field("observedMs", &self.observed_ms)?;
        s.serialize_field("badMs", &self.bad_ms)?;
        s.serialize_field("budget", &self.budget)?;
        s.serialize_field("burnRates", &BurnRates(self))?;
        s.serialize_field("alerts", &self.alerts)?;
        s.end()
    }
}
