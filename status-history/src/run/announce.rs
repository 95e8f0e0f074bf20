//! Maintenances announced to the public: a mute silences, an announcement publishes. What
//! operators announce is kept in the store, so that a restart loses none and a fleet shows
//! one list.

use chrono::{DateTime, Utc};

use super::History;
use crate::model::Announcement;
use crate::Error;

/// The longest title of an announcement, in characters.
pub const MAX_ANNOUNCEMENT_TITLE: usize = 200;

/// The longest text of an announcement, in characters.
pub const MAX_ANNOUNCEMENT_BODY: usize = 4096;

/// The most dependencies one announcement covers.
pub const MAX_ANNOUNCED_DEPENDENCIES: usize = 64;

/// A maintenance to announce, as operators write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAnnouncement {
    /// Its title, for customers: `Database upgrade`.
    pub title: String,
    /// What customers should know.
    pub body: String,
    /// The dependencies it covers (registered ids; the caller checks them).
    pub dependencies: Vec<String>,
    /// When it starts.
    pub start: DateTime<Utc>,
    /// When it ends.
    pub until: DateTime<Utc>,
    /// Who announces it.
    pub actor: Option<String>,
}

impl History {
    /// Checks `a` as [`announce`](Self::announce) would, without keeping anything: what
    /// the admin API asks before it mutes anything.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`]: a blank or overlong title or text, control characters (line
    /// breaks allowed in the text only), no dependency or more than
    /// [`MAX_ANNOUNCED_DEPENDENCIES`], an end not after the start, or one already past.
    pub fn check_announcement(&self, a: &NewAnnouncement) -> Result<NewAnnouncement, Error> {
        let invalid = |e: status_core::Error| Error::invalid(e.to_string());
        let title = status_core::text::printable("title", &a.title).map_err(invalid)?;
        if title.chars().count() > MAX_ANNOUNCEMENT_TITLE {
            return Err(Error::invalid(format!(
                "the title is longer than {MAX_ANNOUNCEMENT_TITLE} characters"
            )));
        }
        let body = status_core::text::paragraphs("message", &a.body).map_err(invalid)?;
        if body.chars().count() > MAX_ANNOUNCEMENT_BODY {
            return Err(Error::invalid(format!(
                "the message is longer than {MAX_ANNOUNCEMENT_BODY} characters"
            )));
        }
        if a.dependencies.is_empty() || a.dependencies.len() > MAX_ANNOUNCED_DEPENDENCIES {
            return Err(Error::invalid(format!(
                "a maintenance covers 1 to {MAX_ANNOUNCED_DEPENDENCIES} dependencies"
            )));
        }
        if a.until <= a.start {
            return Err(Error::invalid("the end must be after the start"));
        }
        if a.until <= self.now() {
            return Err(Error::invalid("the maintenance is already over"));
        }
        let mut dependencies = a.dependencies.clone();
        dependencies.sort();
        dependencies.dedup();
        Ok(NewAnnouncement {
            title: title.to_owned(),
            body,
            dependencies,
            actor: status_core::text::actor(a.actor.as_deref()).map_err(invalid)?,
            ..a.clone()
        })
    }

    /// Announces a maintenance to the public, durable when it answers.
    ///
    /// # Errors
    ///
    /// As [`check_announcement`](Self::check_announcement) (nothing kept), or
    /// [`Error::is_store`] when the store fails.
    pub async fn announce(&self, a: &NewAnnouncement) -> Result<Announcement, Error> {
        let a = self.check_announcement(a)?;
        let kept = Announcement {
            id: 0,
            title: a.title,
            body: a.body,
            dependencies: a.dependencies,
            start: a.start,
            until: a.until,
            created: self.now(),
            actor: a.actor,
            cancelled: None,
        };
        self.shared.store().announce(&kept).await
    }

    /// The announcements in force, ahead, or ended since `since`, called off or not, the
    /// soonest first.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn announcements(&self, since: DateTime<Utc>) -> Result<Vec<Announcement>, Error> {
        self.shared.store().announcements(since).await
    }

    /// Calls off announcement `id` now.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] when there is none; [`Error::is_store`] when the store fails.
    pub async fn cancel_announcement(&self, id: i64) -> Result<Announcement, Error> {
        self.shared
            .store()
            .cancel_announcement(id, self.now())
            .await?
            .ok_or_else(|| Error::not_found("no such maintenance"))
    }
}
