//! Which alerts fire, since when, and what changed: told each report as it is read, in any
//! order of objectives, by any reader; each start and end is answered once.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};

use super::{target_text, Severity, SloReport, ALERT_RULES};

/// An alert that started or ended: what a notifier tells.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmChange {
    /// The objective's name.
    pub slo: String,
    /// Its target as written (`dependency:primary-db`).
    pub target: String,
    /// How urgent.
    pub severity: Severity,
    /// The rule's long window.
    pub long: &'static str,
    /// The rule's short window.
    pub short: &'static str,
    /// The rule's factor.
    pub factor: f64,
    /// The burn rate over the long window when it changed (`None` with nothing observed).
    pub burn_rate: Option<f64>,
    /// What was left of the budget.
    pub budget_remaining: f64,
    /// Whether it started (or ended).
    pub firing: bool,
    /// Since when it fired.
    pub since: DateTime<Utc>,
    /// When it changed.
    pub at: DateTime<Utc>,
}

/// The alerts firing, by objective and rule, and since when. Pure: told reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Alarms {
    /// (objective, rule index) → since (Unix ms).
    firing: BTreeMap<(String, usize), i64>,
    /// The newest report told, per objective (Unix ms): an older one changes nothing.
    seen: BTreeMap<String, i64>,
}

impl Alarms {
    /// No alert firing.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells the alarms `report`: fills each alert's `since` and answers what started or
    /// ended since the last report of the same objective. A report older than one already
    /// told changes nothing (two readers racing), and is only given the `since` known.
    pub fn tell(&mut self, report: &mut SloReport) -> Vec<AlarmChange> {
        let name = report.name().to_owned();
        let at = report.at.timestamp_millis();
        let fresh = self.seen.get(&name).is_none_or(|seen| *seen <= at);
        let mut changes = Vec::new();
        if fresh {
            self.seen.insert(name.clone(), at);
        }
        for (i, alert) in report.alerts.iter_mut().enumerate() {
            let key = (name.clone(), i);
            let since = self.firing.get(&key).copied();
            if fresh && alert.firing != since.is_some() {
                let start = since.unwrap_or(at);
                let rule = ALERT_RULES[i];
                changes.push(AlarmChange {
                    slo: name.clone(),
                    target: target_text(report.objective.target()),
                    severity: rule.severity,
                    long: rule.long,
                    short: rule.short,
                    factor: rule.factor,
                    burn_rate: None,
                    budget_remaining: report.budget.remaining,
                    firing: alert.firing,
                    since: ms(start),
                    at: report.at,
                });
                if alert.firing {
                    self.firing.insert(key.clone(), at);
                } else {
                    self.firing.remove(&key);
                }
            }
            alert.since = if fresh {
                self.firing.get(&key).copied().map(ms)
            } else {
                since.filter(|_| alert.firing).map(ms)
            };
        }
        for change in &mut changes {
            change.burn_rate = report.burn_rate(change.long);
        }
        changes
    }

    /// Forgets objectives not in `names` (no longer declared).
    pub fn retain(&mut self, names: &[&str]) {
        self.firing
            .retain(|(name, _), _| names.contains(&name.as_str()));
        self.seen.retain(|name, _| names.contains(&name.as_str()));
    }

    /// What is firing, to keep across a restart: `name rule since` lines.
    #[must_use]
    pub fn to_kept(&self) -> String {
        self.firing
            .iter()
            .map(|((name, rule), since)| format!("{name} {rule} {since}\n"))
            .collect()
    }

    /// The alarms kept by [`to_kept`](Self::to_kept); lines that do not read are skipped.
    #[must_use]
    pub fn from_kept(text: &str) -> Self {
        let firing = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.split(' ');
                let name = parts.next()?.to_owned();
                let rule: usize = parts
                    .next()?
                    .parse()
                    .ok()
                    .filter(|r| *r < ALERT_RULES.len())?;
                let since: i64 = parts.next()?.parse().ok()?;
                Some(((name, rule), since))
            })
            .collect();
        Self {
            firing,
            seen: BTreeMap::new(),
        }
    }

    /// Whether an alert of `severity` fires for objective `name`.
    #[must_use]
    pub fn is_firing(&self, name: &str, severity: Severity) -> bool {
        self.firing
            .keys()
            .any(|(n, rule)| n == name && ALERT_RULES[*rule].severity == severity)
    }
}

fn ms(t: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(t).single().unwrap_or_default()
}
