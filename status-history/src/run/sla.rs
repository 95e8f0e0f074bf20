//! The SLA report read from the history: every dependency and group kept, and every
//! objective, over one window.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::History;
use crate::model::{Series, Spent};
use crate::objective::target_text;
use crate::sla::SlaRow;
use crate::uptime::{UptimeReport, Window};
use crate::Error;

/// The most incidents an SLA report counts over its window.
const MAX_REPORTED_INCIDENTS: usize = 10_000;

impl History {
    /// The SLA report from `from` to `to`: a row per dependency kept, per group kept and per
    /// objective declared, each over the window as uptime reads it (from the finest tier kept
    /// at `from`, widened to its buckets), excluded time apart. `members` names a group's
    /// dependencies, for the incidents that covered it.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a window that is not one; [`Error::is_store`] when the
    /// store fails.
    pub async fn sla_report(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        members: impl Fn(&str) -> Vec<String>,
    ) -> Result<Vec<SlaRow>, Error> {
        let now = self.now();
        let window = Window::new(from, to, now, &self.shared.builder.retention)?;
        let store = self.shared.store();
        let incidents: Vec<_> = self
            .incidents(window.from, MAX_REPORTED_INCIDENTS)
            .await?
            .into_iter()
            .filter(|i| {
                i.started >= window.from.timestamp_millis()
                    && i.started < window.to.timestamp_millis()
            })
            .collect();
        let opened = |ids: &[String]| {
            incidents
                .iter()
                .filter(|i| {
                    ids.iter()
                        .any(|id| i.roots.contains(id) || i.affected.contains_key(id))
                })
                .count() as u64
        };
        let exclusions = self.current_exclusions().await;
        let excluded = |series: &Series| -> u64 {
            exclusions
                .iter()
                .filter(|e| &e.series == series)
                .map(|e| e.excluded_ms(window.tier, window.from.timestamp(), window.to.timestamp()))
                .sum()
        };
        let mut spent: HashMap<Series, Spent> = HashMap::new();
        let mut rows = Vec::new();
        let mut all = store.series("dependency").await?;
        all.extend(store.series("group").await?);
        for o in self.objectives() {
            if !all.contains(o.target()) {
                all.push(o.target().clone());
            }
        }
        for series in &all {
            let buckets = self
                .live_buckets(series, window.tier, window.from, window.to)
                .await?;
            let report = UptimeReport::of(series.clone(), window, &buckets, self.weights());
            spent.insert(series.clone(), report.spent);
            let ids = match series {
                Series::Dependency(id) => vec![id.clone()],
                Series::Group(name) => members(name),
                Series::System => continue,
            };
            let s = report.spent;
            let bad = s.major + s.outage;
            rows.push(SlaRow {
                kind: series.kind(),
                name: series.name().to_owned(),
                target: None,
                objective: None,
                from: window.from,
                to: window.to,
                observed_ms: s.unmuted(),
                bad_ms: bad,
                good_share: share(s.unmuted() - bad, s.unmuted()),
                uptime: report.uptime,
                incidents_opened: opened(&ids),
                excluded_ms: excluded(series),
                met: None,
            });
        }
        for o in self.objectives() {
            let s = spent.get(o.target()).copied().unwrap_or_default();
            let bad = o.bad(&s);
            let ids: Vec<String> = match o.target() {
                Series::Dependency(id) => vec![id.clone()],
                Series::Group(name) => members(name),
                Series::System => Vec::new(),
            };
            let good = share(s.unmuted() - bad, s.unmuted());
            rows.push(SlaRow {
                kind: "objective",
                name: o.name().to_owned(),
                target: Some(target_text(o.target())),
                objective: Some(o.objective()),
                from: window.from,
                to: window.to,
                observed_ms: s.unmuted(),
                bad_ms: bad,
                good_share: good,
                uptime: None,
                incidents_opened: if matches!(o.target(), Series::System) {
                    incidents.len() as u64
                } else {
                    opened(&ids)
                },
                excluded_ms: excluded(o.target()),
                met: good.map(|g| g >= o.objective()),
            });
        }
        Ok(rows)
    }
}

#[allow(clippy::cast_precision_loss)] // far below 2^52 ms
fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}
