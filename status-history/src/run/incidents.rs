//! Incidents on the handle: what the driver tells the tracker, what it restores at a
//! start, and the reads and updates the routes serve.

use chrono::{DateTime, Utc};
use status_core::Facts;

use super::History;
use crate::incident::{
    Incident, IncidentFact, IncidentTracker, IncidentUpdate, NewPostmortem, NewUpdate, Phase,
    Postmortem, Scene, SceneDependency, UpdateStatus,
};
use crate::store::HistoryStore;
use crate::Error;

/// What the registry's facts say, as the tracker reads them: nothing derived here.
pub(super) fn scene(facts: &Facts) -> Scene {
    let dependencies = facts
        .dependencies()
        .iter()
        .filter(|d| d.result().checked())
        .map(|d| SceneDependency {
            id: d.id().as_str().to_owned(),
            status: d.level(),
            urgency: d.result().urgency(),
            blocked_by: d
                .blocked_by()
                .iter()
                .map(|id| id.as_str().to_owned())
                .collect(),
            in_failing_group: facts.groups_of(d).any(|g| g.state().failing()),
            impact: d.impact(),
            maintenance: d.maintenance(),
        })
        .collect();
    Scene {
        dependencies,
        system_failing: !facts.policy().serves(facts.level()),
    }
}

/// Gives the tracker back the incidents the store keeps open.
pub(super) async fn restore(store: &dyn HistoryStore, tracker: &mut IncidentTracker) {
    match store.incidents(DateTime::<Utc>::MAX_UTC, 1000).await {
        Ok(open) => tracker.restore(open.into_iter().map(|i| IncidentFact {
            roots: i.roots,
            affected: i.affected,
            impact: i.impact,
            started: i.started,
            at: i.updated,
            phase: Phase::Open,
        })),
        Err(e) => tracing::warn!("the open incidents could not be read back: {e}"),
    }
}

/// Who an operator's update without a named actor is kept as said by.
pub const OPERATOR: &str = "operator";

/// The longest message an update may carry, in characters.
pub const MAX_UPDATE_MESSAGE: usize = 4096;

/// The longest postmortem, in characters (and an admin body is at most 16 KiB).
pub const MAX_POSTMORTEM: usize = 10_000;

impl History {
    /// The incidents open, and those resolved since `since`, the latest started first, at
    /// most `limit`, each with its updates.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn incidents(
        &self,
        since: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Incident>, Error> {
        self.shared.store().incidents(since, limit).await
    }

    /// The incident `id`, if kept.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn incident(&self, id: i64) -> Result<Option<Incident>, Error> {
        self.shared.store().incident(id).await
    }

    /// Posts an operator's update to incident `id` now, durable when it answers (said by
    /// `actor`, or by [`OPERATOR`] when none is named):
    /// `resolved` resolves it (a later failure of its roots reopens it within the quiet
    /// time, or opens another).
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a blank message, one over [`MAX_UPDATE_MESSAGE`]
    /// characters, or a message or actor with control characters (line breaks included:
    /// what operators say reaches logs), as `status_core::text` says (nothing is written);
    /// [`Error::is_not_found`] when there is no such incident; [`Error::is_store`] when the
    /// store fails.
    pub async fn post_update(
        &self,
        id: i64,
        status: UpdateStatus,
        message: &str,
        actor: Option<&str>,
    ) -> Result<IncidentUpdate, Error> {
        let invalid = |e: status_core::Error| Error::invalid(e.to_string());
        let message = status_core::text::printable("message", message).map_err(invalid)?;
        if message.chars().count() > MAX_UPDATE_MESSAGE {
            return Err(Error::invalid(format!(
                "the message is longer than {MAX_UPDATE_MESSAGE} characters"
            )));
        }
        let actor = status_core::text::actor(actor).map_err(invalid)?;
        let update = NewUpdate {
            incident: id,
            at: self.now().timestamp_millis(),
            status,
            message: message.to_owned(),
            // The engine's updates have no actor: an operator's always has one.
            actor: Some(actor.unwrap_or_else(|| OPERATOR.to_owned())),
        };
        self.shared
            .store()
            .post_update(&update)
            .await?
            .ok_or_else(|| Error::not_found("no such incident"))
    }

    /// Publishes `body` as the postmortem of resolved incident `id` now, durable when it
    /// answers (written by `actor`, or by [`OPERATOR`]), replacing an earlier one.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a blank body, one over [`MAX_POSTMORTEM`] characters, or one
    /// with control characters other than line breaks (nothing is written);
    /// [`Error::is_not_found`] when there is no such incident; [`Error::is_conflict`] when it
    /// is not resolved (a postmortem follows the resolution); [`Error::is_store`] when the
    /// store fails.
    pub async fn post_postmortem(
        &self,
        id: i64,
        body: &str,
        actor: Option<&str>,
    ) -> Result<Postmortem, Error> {
        let invalid = |e: status_core::Error| Error::invalid(e.to_string());
        let body = status_core::text::paragraphs("postmortem", body).map_err(invalid)?;
        if body.chars().count() > MAX_POSTMORTEM {
            return Err(Error::invalid(format!(
                "the postmortem is longer than {MAX_POSTMORTEM} characters"
            )));
        }
        let actor = status_core::text::actor(actor).map_err(invalid)?;
        let incident = self
            .incident(id)
            .await?
            .ok_or_else(|| Error::not_found("no such incident"))?;
        if incident.resolved.is_none() {
            return Err(Error::conflict(
                "the incident is not resolved: its postmortem follows its resolution",
            ));
        }
        let postmortem = NewPostmortem {
            incident: id,
            postmortem: Postmortem {
                body,
                at: self.now().timestamp_millis(),
                actor: Some(actor.unwrap_or_else(|| OPERATOR.to_owned())),
            },
        };
        self.shared
            .store()
            .set_postmortem(&postmortem)
            .await?
            .ok_or_else(|| Error::not_found("no such incident"))
    }

    /// The open incident `dependency` belongs to (a root of it, or covered by it), or with
    /// `None` the latest open; after waiting (at most `patience`) for the next write, so that
    /// an incident opened by the change being told is found: what a notifier asks to say which
    /// incident a notice belongs to. `None` when there is none, or the store fails.
    pub async fn incident_of(
        &self,
        dependency: Option<&str>,
        patience: std::time::Duration,
    ) -> Option<Incident> {
        let mut flushed = self.shared.flushed.subscribe();
        flushed.borrow_and_update();
        let _ = tokio::time::timeout(patience, flushed.changed()).await;
        let open = self
            .shared
            .store()
            .incidents(DateTime::<Utc>::MAX_UTC, 100)
            .await
            .ok()?;
        open.into_iter().find(|i| {
            dependency.is_none_or(|d| i.affected.contains_key(d) || i.roots.iter().any(|r| r == d))
        })
    }

    /// The quiet time after which an incident resolves.
    #[must_use]
    pub fn incident_quiet(&self) -> std::time::Duration {
        self.shared.builder.incident_quiet
    }
}
