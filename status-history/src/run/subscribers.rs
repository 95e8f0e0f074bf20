//! The status page's subscribers, kept in the store (a restart loses none; a fleet shares
//! one list and one record of what was sent, so that each message goes out once). The rules
//! (double opt-in, cooldowns, bounds) are the page's; these only keep.

use chrono::{DateTime, Utc};

use super::History;
use crate::model::{Subscriber, SubscriberKind};
use crate::Error;

impl History {
    /// The subscriber of `kind` at `address`, if any.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn subscriber(
        &self,
        kind: SubscriberKind,
        address: &str,
    ) -> Result<Option<Subscriber>, Error> {
        self.shared.store().subscriber(kind, address).await
    }

    /// Keeps `subscriber`, or updates the one of its kind and address (see
    /// [`HistoryStore::subscribe`](crate::HistoryStore::subscribe)).
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn subscribe(&self, subscriber: &Subscriber) -> Result<Subscriber, Error> {
        self.shared.store().subscribe(subscriber).await
    }

    /// Confirms the subscriber whose token hashes to `token`, now.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] for a token of no subscriber; [`Error::is_store`].
    pub async fn confirm_subscriber(&self, token: &str) -> Result<Subscriber, Error> {
        self.shared
            .store()
            .confirm_subscriber(token, self.now())
            .await?
            .ok_or_else(|| Error::not_found("no subscription has this token"))
    }

    /// Removes the subscriber whose token hashes to `token`.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] for a token of no subscriber; [`Error::is_store`].
    pub async fn unsubscribe(&self, token: &str) -> Result<Subscriber, Error> {
        self.shared
            .store()
            .unsubscribe(token)
            .await?
            .ok_or_else(|| Error::not_found("no subscription has this token"))
    }

    /// Every subscriber, confirmed or not.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn subscribers(&self) -> Result<Vec<Subscriber>, Error> {
        self.shared.store().subscribers().await
    }

    /// Removes the subscriber `id` (an operator's act) and what it was sent: the removed
    /// one, or `None` when there is none.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn remove_subscriber(&self, id: i64) -> Result<Option<Subscriber>, Error> {
        self.shared.store().remove_subscriber(id).await
    }

    /// Claims the sending of `event` to `subscriber` at `at`: `true` when this instance is
    /// the one to send it.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails (then nothing is sent: better late, from
    /// the next try, than twice).
    pub async fn claim_delivery(
        &self,
        event: &str,
        subscriber: i64,
        at: DateTime<Utc>,
    ) -> Result<bool, Error> {
        self.shared
            .store()
            .claim_delivery(event, subscriber, at)
            .await
    }

    /// Claims the sending of `event` to each of `subscribers` at `at`, in one write: answers
    /// those this instance is the one to send to.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails (then none is claimed, and nothing is sent).
    pub async fn claim_deliveries(
        &self,
        event: &str,
        subscribers: &[i64],
        at: DateTime<Utc>,
    ) -> Result<Vec<i64>, Error> {
        if subscribers.is_empty() {
            return Ok(Vec::new());
        }
        self.shared
            .store()
            .claim_deliveries(event, subscribers, at)
            .await
    }

    /// Lets a claim go after a failed sending: it is tried again.
    ///
    /// # Errors
    ///
    /// [`Error::is_store`] when the store fails.
    pub async fn release_delivery(&self, event: &str, subscriber: i64) -> Result<(), Error> {
        self.shared
            .store()
            .release_delivery(event, subscriber)
            .await
    }
}
