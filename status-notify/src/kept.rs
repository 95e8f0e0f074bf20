//! What the notifier keeps in a history (feature `history`): its last-told and the incident
//! each notice belongs to, wired in one call.

use std::time::Duration;

use status_history::History;

use crate::{IncidentLink, Notice, NotificationsBuilder, Told};

/// The key the notifier's last-told is kept under in the history.
pub const TOLD_KEY: &str = "notify.told";

impl NotificationsBuilder {
    /// Keeps the notifier's memory in `history`: what was told survives a restart (no notice
    /// repeated, no "resolved" lost: [`remember`](Self::remember)), and each notice says the
    /// incident it belongs to ([`incidents`](Self::incidents)), with a link to it on the
    /// public status page at `page` (`https://status.example.com/status/page`) when given.
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
        self.remember(recall, move |told| {
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
