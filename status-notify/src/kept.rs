//! What the notifier keeps in a history (feature `history`): its last-told and the incident
//! each notice belongs to, wired in one call.

use std::time::Duration;

use std::collections::HashSet;

use status_history::objective::AlarmChange;
use status_history::History;

use crate::{IncidentLink, Notice, NotificationsBuilder, SloAlert, Told};

/// The key the notifier's last-told is kept under in the history.
pub const TOLD_KEY: &str = "notify.told";

impl NotificationsBuilder {
    /// Keeps the notifier's memory in `history`: what was told survives a restart (no notice
    /// repeated, no "resolved" lost: [`remember`](Self::remember)), and each notice says the
    /// incident it belongs to ([`incidents`](Self::incidents)), with a link to it on the
    /// public status page at `page` (`https://status.example.com/status/page`) when given.
    ///
    /// The history's objectives' alerts are told too ([`Notice::Slo`]), each start and end
    /// once; an alert on a dependency muted or in maintenance when it starts is not told, nor
    /// is its end.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn demo(registry: status_core::Registry) -> Result<(), Box<dyn std::error::Error>> {
    /// let history = status_history::History::sqlite("status-history.db").open();
    /// history.attach(&registry);
    /// let notifications = status_notify::Notifications::builder(&registry)
    ///     .history(&history, Some("https://status.example.com/status/page"))
    ///     .sink(status_notify::Webhook::new("https://ops.example.com/hook")?)
    ///     .start()?;
    /// # Ok(()) }
    /// ```
    pub fn history(self, history: &History, page: Option<&str>) -> Self {
        let recall = {
            let history = history.clone();
            async move {
                let json = history.state(TOLD_KEY, Duration::from_secs(10)).await?;
                serde_json::from_str::<Told>(&json).ok()
            }
        };
        let kept = history.clone();
        let history = history.clone();
        let page = page.map(|p| p.trim_end_matches('/').to_owned());
        let alarms = history.alarms();
        self.feed(Box::new(move |tell, registry| {
            Box::pin(tell_alarms(alarms, tell, registry))
        }))
        .remember(recall, move |told| {
            if let Ok(json) = serde_json::to_string(told) {
                kept.put_state(TOLD_KEY, json);
            }
        })
        .incidents(move |notice| {
            let history = history.clone();
            let page = page.clone();
            let dependency = match notice {
                Notice::Changed { id, .. }
                | Notice::Resolved { id, .. }
                | Notice::Flapping { id } => Some(id.as_str().to_owned()),
                _ => None,
            };
            async move {
                let incident = history
                    .incident_of(dependency.as_deref(), Duration::from_secs(2))
                    .await?;
                Some(IncidentLink {
                    id: incident.id.to_string(),
                    url: page.map(|page| format!("{page}#incident-{}", incident.id)),
                })
            }
        })
    }
}

/// Tells each alarm change as a [`Notice::Slo`] until the notifier ends.
async fn tell_alarms(
    mut alarms: tokio::sync::broadcast::Receiver<AlarmChange>,
    tell: tokio::sync::mpsc::Sender<Notice>,
    registry: status_core::WeakRegistry,
) {
    use tokio::sync::broadcast::error::RecvError;
    // Starts not told (muted), so that their ends are not told either.
    let mut silent: HashSet<(String, &'static str)> = HashSet::new();
    loop {
        let change = tokio::select! {
            change = alarms.recv() => change,
            () = tell.closed() => return,
        };
        let change = match change {
            Ok(change) => change,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("{n} objective alerts were not told: the notifier is behind");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let key = (change.slo.clone(), change.long);
        let muted = || {
            let dependency = change.target.strip_prefix("dependency:")?;
            registry.upgrade()?.muted(dependency)
        };
        if change.firing {
            if muted().is_some() {
                silent.insert(key);
                continue;
            }
        } else if silent.remove(&key) {
            continue;
        }
        let notice = Notice::Slo(Box::new(SloAlert {
            slo: change.slo,
            target: change.target,
            severity: change.severity.as_str().to_owned(),
            long: change.long.to_owned(),
            short: change.short.to_owned(),
            factor: change.factor,
            burn_rate: change.burn_rate,
            budget_remaining: change.budget_remaining,
            firing: change.firing,
            since: change
                .since
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        }));
        if tell.send(notice).await.is_err() {
            return;
        }
    }
}
