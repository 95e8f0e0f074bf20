//! [`SqliteHistory`]: the SQLite file as a [`HistoryStore`], each call on a blocking thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use super::SqliteStore;
use crate::exclusion::Exclusion;
use crate::incident::{Incident, IncidentUpdate, NewPostmortem, NewUpdate, Postmortem};
use crate::model::{
    Announcement, AuditRecord, Bucket, MuteRecord, OverrideRecord, Series, Subscriber,
    SubscriberKind, Tier, TransitionRecord,
};
use crate::store::{HistoryStore, StoreFuture};
use crate::{Error, Retention, Writes};

/// History in a SQLite file (or in memory): the embedded store, the default. Cheap to
/// clone: clones share the file.
#[derive(Debug, Clone)]
pub struct SqliteHistory {
    path: Option<PathBuf>,
    max_pages: Option<u32>,
    store: Arc<Mutex<Option<SqliteStore>>>,
    moved_aside: Arc<Mutex<Option<PathBuf>>>,
}

impl SqliteHistory {
    /// A store in the file at `path`, created if missing, opened by the driver.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Some(path.into()),
            max_pages: None,
            store: Arc::default(),
            moved_aside: Arc::default(),
        }
    }

    /// A store in memory: for tests and demos, gone at exit.
    #[must_use]
    pub fn in_memory() -> Self {
        Self {
            path: None,
            max_pages: None,
            store: Arc::default(),
            moved_aside: Arc::default(),
        }
    }

    /// A hard cap on the file: at most `pages` pages (SQLite's `max_page_count`; a page is
    /// 4 KiB), past which writes fail as on a full disk (and are said, held back and retried
    /// as on one), until pages are freed. The retention's size bound is the soft one, this
    /// the hard one.
    #[must_use]
    pub fn max_pages(mut self, pages: u32) -> Self {
        self.max_pages = Some(pages);
        self
    }

    /// Runs `f` on the open store, on a blocking thread.
    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut SqliteStore) -> Result<T, Error> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let store = Arc::clone(&self.store);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = crate::sync::lock(&store);
                let store = guard
                    .as_mut()
                    .ok_or_else(|| Error::new("the store is not open"))?;
                f(store)
            })
            .await
            .map_err(|e| Error::new(format!("the store's thread failed: {e}")))?
        })
    }
}

impl HistoryStore for SqliteHistory {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn open(&self, now: DateTime<Utc>) -> StoreFuture<'_, ()> {
        let now = now.timestamp_millis();
        let (path, store, aside, max_pages) = (
            self.path.clone(),
            Arc::clone(&self.store),
            Arc::clone(&self.moved_aside),
            self.max_pages,
        );
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let opened = match &path {
                    Some(path) => SqliteStore::open(path, now)?,
                    None => super::Opened {
                        store: SqliteStore::in_memory(now)?,
                        moved_aside: None,
                    },
                };
                if let Some(pages) = max_pages {
                    opened
                        .store
                        .connection()
                        .pragma_update(None, "max_page_count", pages)
                        .map_err(Error::sqlite)?;
                }
                if opened.moved_aside.is_some() {
                    *crate::sync::lock(&aside) = opened.moved_aside;
                }
                *crate::sync::lock(&store) = Some(opened.store);
                Ok(())
            })
            .await
            .map_err(|e| Error::new(format!("the store's thread failed: {e}")))?
        })
    }

    fn is_open(&self) -> bool {
        crate::sync::lock(&self.store).is_some()
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        let store = Arc::clone(&self.store);
        Box::pin(async move {
            // On a blocking thread, after any call in flight (they hold the same lock).
            tokio::task::spawn_blocking(move || {
                drop(crate::sync::lock(&store).take());
            })
            .await
            .map_err(|e| Error::new(format!("the store's thread failed: {e}")))
        })
    }

    fn note(&self) -> Option<String> {
        let aside = crate::sync::lock(&self.moved_aside);
        aside.as_ref().map(|aside| {
            format!(
                "the history file was corrupt: moved aside to {}, a fresh one started",
                aside.display()
            )
        })
    }

    fn write<'a>(&'a self, writes: &'a Writes) -> StoreFuture<'a, ()> {
        let writes = writes.clone();
        self.with(move |store| store.write(&writes))
    }

    fn buckets<'a>(
        &'a self,
        series: &'a Series,
        tier: Tier,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<Bucket>> {
        let series = series.clone();
        let (from, to) = (from.timestamp(), to.timestamp());
        self.with(move |store| store.buckets(&series, tier, from, to))
    }

    fn days_of<'a>(
        &'a self,
        kind: &'a str,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<(Series, Vec<Bucket>)>> {
        let kind = kind.to_owned();
        let (from, to) = (from.timestamp(), to.timestamp());
        self.with(move |store| store.days_of(&kind, from, to))
    }

    fn transitions<'a>(
        &'a self,
        series: &'a Series,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> StoreFuture<'a, Vec<TransitionRecord>> {
        let series = series.clone();
        let (from, to) = (from.timestamp_millis(), to.timestamp_millis());
        self.with(move |store| store.transitions(&series, from, to, limit))
    }

    fn audit(&self, before: Option<i64>, limit: usize) -> StoreFuture<'_, Vec<(i64, AuditRecord)>> {
        self.with(move |store| store.audit(before, limit))
    }

    fn mutes(&self) -> StoreFuture<'_, Vec<MuteRecord>> {
        self.with(|store| store.mutes())
    }

    fn overrides(&self) -> StoreFuture<'_, Vec<OverrideRecord>> {
        self.with(|store| store.overrides())
    }

    fn state<'a>(&'a self, key: &'a str) -> StoreFuture<'a, Option<String>> {
        let key = key.to_owned();
        self.with(move |store| store.state(&key))
    }

    fn series<'a>(&'a self, kind: &'a str) -> StoreFuture<'a, Vec<Series>> {
        let kind = kind.to_owned();
        self.with(move |store| store.series(&kind))
    }

    fn incidents(&self, since: DateTime<Utc>, limit: usize) -> StoreFuture<'_, Vec<Incident>> {
        let since = since.timestamp_millis();
        self.with(move |store| store.incidents(since, limit))
    }

    fn incident(&self, id: i64) -> StoreFuture<'_, Option<Incident>> {
        self.with(move |store| store.incident(id))
    }

    fn post_update<'a>(&'a self, update: &'a NewUpdate) -> StoreFuture<'a, Option<IncidentUpdate>> {
        let update = update.clone();
        self.with(move |store| store.post_update(&update))
    }

    fn set_postmortem<'a>(
        &'a self,
        postmortem: &'a NewPostmortem,
    ) -> StoreFuture<'a, Option<Postmortem>> {
        let postmortem = postmortem.clone();
        self.with(move |store| store.set_postmortem(&postmortem))
    }

    fn announce<'a>(&'a self, announcement: &'a Announcement) -> StoreFuture<'a, Announcement> {
        let announcement = announcement.clone();
        self.with(move |store| store.announce(&announcement))
    }

    fn announcements(&self, since: DateTime<Utc>) -> StoreFuture<'_, Vec<Announcement>> {
        self.with(move |store| store.announcements(since.timestamp_millis()))
    }

    fn cancel_announcement(
        &self,
        id: i64,
        at: DateTime<Utc>,
    ) -> StoreFuture<'_, Option<Announcement>> {
        self.with(move |store| store.cancel_announcement(id, at.timestamp_millis()))
    }

    fn exclude<'a>(&'a self, exclusion: &'a Exclusion) -> StoreFuture<'a, Exclusion> {
        let exclusion = exclusion.clone();
        self.with(move |store| store.exclude(&exclusion))
    }

    fn exclusions(&self) -> StoreFuture<'_, Vec<Exclusion>> {
        self.with(|store| store.exclusions())
    }

    fn remove_exclusion(&self, id: i64) -> StoreFuture<'_, Option<Exclusion>> {
        self.with(move |store| store.remove_exclusion(id))
    }

    fn subscriber<'a>(
        &'a self,
        kind: SubscriberKind,
        address: &'a str,
    ) -> StoreFuture<'a, Option<Subscriber>> {
        let address = address.to_owned();
        self.with(move |store| store.subscriber(kind, &address))
    }

    fn subscribe<'a>(&'a self, subscriber: &'a Subscriber) -> StoreFuture<'a, Subscriber> {
        let subscriber = subscriber.clone();
        self.with(move |store| store.subscribe(&subscriber))
    }

    fn confirm_subscriber<'a>(
        &'a self,
        token: &'a str,
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, Option<Subscriber>> {
        let token = token.to_owned();
        self.with(move |store| store.confirm_subscriber(&token, at.timestamp_millis()))
    }

    fn unsubscribe<'a>(&'a self, token: &'a str) -> StoreFuture<'a, Option<Subscriber>> {
        let token = token.to_owned();
        self.with(move |store| store.unsubscribe(&token))
    }

    fn remove_subscriber(&self, id: i64) -> StoreFuture<'_, Option<Subscriber>> {
        self.with(move |store| store.remove_subscriber(id))
    }

    fn subscribers(&self) -> StoreFuture<'_, Vec<Subscriber>> {
        self.with(|store| store.subscribers())
    }

    fn claim_delivery<'a>(
        &'a self,
        event: &'a str,
        subscriber: i64,
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, bool> {
        let event = event.to_owned();
        self.with(move |store| store.claim_delivery(&event, subscriber, at.timestamp_millis()))
    }

    fn claim_deliveries<'a>(
        &'a self,
        event: &'a str,
        subscribers: &'a [i64],
        at: DateTime<Utc>,
    ) -> StoreFuture<'a, Vec<i64>> {
        let event = event.to_owned();
        let subscribers = subscribers.to_vec();
        self.with(move |store| store.claim_deliveries(&event, &subscribers, at.timestamp_millis()))
    }

    fn release_delivery<'a>(&'a self, event: &'a str, subscriber: i64) -> StoreFuture<'a, ()> {
        let event = event.to_owned();
        self.with(move |store| store.release_delivery(&event, subscriber))
    }

    fn prune<'a>(&'a self, now: DateTime<Utc>, retention: &'a Retention) -> StoreFuture<'a, u64> {
        let now = now.timestamp_millis();
        let retention = retention.clone();
        self.with(move |store| store.prune(now, &retention))
    }
}
