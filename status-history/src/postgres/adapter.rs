//! [`PostgresHistory`] as a [`HistoryStore`]: each call its SQL's, bounded by the client's
//! deadline.

use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};

use super::{write, PostgresHistory};
use crate::exclusion::Exclusion;
use crate::incident::{Incident, IncidentUpdate, NewPostmortem, NewUpdate, Postmortem};
use crate::model::{
    Announcement, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Subscriber,
    SubscriberKind, Tier, TransitionRecord,
};
use crate::store::{HistoryStore, StoreFuture};
use crate::{Retention, Writes};

impl HistoryStore for PostgresHistory {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn open(&self, now: DateTime<Utc>) -> StoreFuture<'_, ()> {
        Box::pin(self.open_at(now.timestamp_millis()))
    }

    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.close_now())
    }

    fn write<'a>(&'a self, writes: &'a Writes) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let known = crate::sync::lock(&self.series).clone();
            let learned = self
                .call(async |client| {
                    let tx = client.transaction().await?;
                    let learned = write::write_all(&tx, known, self, writes).await?;
                    tx.commit().await?;
                    Ok(learned)
                })
                .await?;
            crate::sync::lock(&self.series).extend(learned);
            Ok(())
        })
    }

    fn buckets<'a>(
        &'a self,
        series: &'a Series,
        tier: Tier,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<Bucket>> {
        Box::pin(self.buckets_of(series, tier, from.timestamp(), to.timestamp()))
    }

    fn days_of<'a>(
        &'a self,
        kind: &'a str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<(Series, Vec<Bucket>)>> {
        Box::pin(self.days_of_of(kind, from.timestamp(), to.timestamp()))
    }

    fn transitions<'a>(
        &'a self,
        series: &'a Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TransitionRecord>> {
        Box::pin(self.transitions_of(
            series,
            from.timestamp_millis(),
            to.timestamp_millis(),
            limit,
        ))
    }

    fn audit(&self, before: Option<i64>, limit: usize) -> StoreFuture<'_, Vec<(i64, AuditRecord)>> {
        Box::pin(self.audit_of(before, limit))
    }

    fn mutes(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        Box::pin(self.mutes_of())
    }

    fn peer_mutes(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        Box::pin(self.peer_mutes_of())
    }

    fn mute_ends(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        Box::pin(self.mute_ends_of())
    }

    fn overrides(&self) -> StoreFuture<'_, Vec<OverrideRecord>> {
        Box::pin(self.overrides_of())
    }

    fn state<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<String>> {
        Box::pin(self.state_of(key))
    }

    fn series<'a>(&'a self, kind: &'a str) -> StoreFuture<'a, Vec<Series>> {
        Box::pin(self.series_of(kind))
    }

    fn incidents(&self, since: DateTime<Utc>, limit: usize) -> StoreFuture<'_, Vec<Incident>> {
        Box::pin(self.incidents_of(since.timestamp_millis(), limit))
    }

    fn incident(&self, id: i64) -> StoreFuture<'_, Option<Incident>> {
        Box::pin(self.incident_of(id))
    }

    fn post_update<'a>(&'a self, update: &'a NewUpdate) -> StoreFuture<'a, Option<IncidentUpdate>> {
        Box::pin(self.post_update_of(update))
    }

    fn set_postmortem<'a>(
        &'a self,
        postmortem: &'a NewPostmortem,
    ) -> StoreFuture<'a, Option<Postmortem>> {
        Box::pin(self.set_postmortem_of(postmortem))
    }

    fn announce<'a>(&'a self, announcement: &'a Announcement) -> StoreFuture<'a, Announcement> {
        Box::pin(self.announce_of(announcement))
    }

    fn announcements(&self, since: DateTime<Utc>) -> StoreFuture<'_, Vec<Announcement>> {
        Box::pin(self.announcements_of(since.timestamp_millis()))
    }

    fn cancel_announcement(
        &self,
        id: i64,
        at: DateTime<Utc>,
    ) -> StoreFuture<'_, Option<Announcement>> {
        Box::pin(self.cancel_announcement_of(id, at.timestamp_millis()))
    }

    fn exclude<'a>(&'a self, exclusion: &'a Exclusion) -> StoreFuture<'a, Exclusion> {
        Box::pin(self.exclude_of(exclusion))
    }

    fn exclusions(&self) -> StoreFuture<'_, Vec<Exclusion>> {
        Box::pin(self.exclusions_of())
    }

    fn remove_exclusion(&self, id: i64) -> StoreFuture<'_, Option<Exclusion>> {
        Box::pin(self.remove_exclusion_of(id))
    }

    fn subscriber<'a>(
        &'a self,
        kind: SubscriberKind,
        address: &'a str,
    ) -> StoreFuture<'a, Option<Subscriber>> {
        Box::pin(self.subscriber_of(kind, address))
    }

    fn subscribe<'a>(&'a self, subscriber: &'a Subscriber) -> StoreFuture<'a, Subscriber> {
        Box::pin(self.subscribe_of(subscriber))
    }

    fn confirm_subscriber<'a>(
        &'a self,
        token: &'a str,
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, Option<Subscriber>> {
        Box::pin(self.confirm_subscriber_of(token, at.timestamp_millis()))
    }

    fn unsubscribe<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Subscriber>> {
        Box::pin(self.unsubscribe_of(token))
    }

    fn remove_subscriber(&self, id: i64) -> StoreFuture<'_, Option<Subscriber>> {
        Box::pin(self.remove_subscriber_of(id))
    }

    fn subscribers(&self) -> StoreFuture<'_, Vec<Subscriber>> {
        Box::pin(self.subscribers_of())
    }

    fn claim_delivery<'a>(
        &'a self,
        event: &'a str,
        subscriber: i64,
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, bool> {
        Box::pin(self.claim_delivery_of(event, subscriber, at.timestamp_millis()))
    }

    fn claim_deliveries<'a>(
        &'a self,
        event: &'a str,
        subscribers: &'a [i64],
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<i64>> {
        Box::pin(self.claim_deliveries_of(event, subscribers, at.timestamp_millis()))
    }

    fn release_delivery<'a>(&'a self, event: &'a str, subscriber: i64) -> StoreFuture<'a, ()> {
        Box::pin(self.release_delivery_of(event, subscriber))
    }

    fn prune<'a>(&'a self, now: DateTime<Utc>, retention: &'a Retention) -> StoreFuture<'a, u64> {
        Box::pin(self.prune_of(now.timestamp_millis(), retention))
    }
}
