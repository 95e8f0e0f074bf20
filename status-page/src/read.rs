//! What the page reads from the store: the public incidents and the maintenances announced,
//! each read at most once a second and the last read served when the store fails.

use std::sync::Arc;

use status_history::incident::Incident;
use status_history::Announcement;
use tokio::time::Instant;

use crate::{feed, Kept, StatusPageState, INCIDENTS_FRESH, MAX_INCIDENTS, PAST};

impl StatusPageState {
    /// The public incidents open and past (14 days), read from the store at most once a
    /// second (and judged public then, by the [`Publication`] rule); a store that fails serves
    /// the last read (none before the first).
    pub(crate) async fn incidents(&self) -> Arc<Vec<Incident>> {
        self.read(&self.incidents, PAST, MAX_INCIDENTS).await
    }

    /// The incidents of the feeds: open and of the last 90 days, read as
    /// [`incidents`](Self::incidents) are.
    pub(crate) async fn feed_incidents(&self) -> Arc<Vec<Incident>> {
        let days = chrono::Duration::days(feed::FEED_DAYS);
        self.read(&self.feed, days, feed::MAX_FEED_INCIDENTS).await
    }

    async fn read(&self, kept: &Kept, past: chrono::Duration, most: usize) -> Arc<Vec<Incident>> {
        let Some(history) = &self.history else {
            // One list for every request: the snapshot it keys stays the same.
            return Arc::clone(&self.none);
        };
        let mut cached = kept.lock().await;
        if let Some((at, list)) = &*cached {
            if at.elapsed() < INCIDENTS_FRESH {
                return Arc::clone(list);
            }
        }
        let since = history.now() - past;
        let last = cached
            .as_ref()
            .map_or_else(|| Arc::clone(&self.none), |(_, list)| Arc::clone(list));
        let now = history.now().timestamp_millis();
        let public = |list: Vec<Incident>| -> Vec<Incident> {
            list.into_iter()
                .filter(|i| self.publication.shows(i, now))
                .collect()
        };
        let list = match history.incidents(since, most).await.map(public) {
            // The same incidents as the last read keep its list, and so the snapshot.
            Ok(list) if *last == list => last,
            Ok(list) => Arc::new(list),
            Err(e) => {
                tracing::warn!("the status page could not read incidents: {e}");
                last
            }
        };
        *cached = Some((Instant::now(), Arc::clone(&list)));
        list
    }

    /// The maintenances announced (in force, ahead, or ended in the last 90 days), read as
    /// [`incidents`](Self::incidents) are.
    pub(crate) async fn announcements(&self) -> Arc<Vec<Announcement>> {
        let Some(history) = &self.history else {
            return Arc::clone(&self.unannounced);
        };
        let mut cached = self.announced.lock().await;
        if let Some((at, list)) = &*cached {
            if at.elapsed() < INCIDENTS_FRESH {
                return Arc::clone(list);
            }
        }
        let last = cached
            .as_ref()
            .map_or_else(|| Arc::clone(&self.unannounced), |(_, l)| Arc::clone(l));
        let since = history.now() - chrono::Duration::days(feed::FEED_DAYS);
        let list = match history.announcements(since).await {
            Ok(list) if *last == list => last,
            Ok(list) => Arc::new(list),
            Err(e) => {
                tracing::warn!("the status page could not read the maintenances announced: {e}");
                last
            }
        };
        *cached = Some((Instant::now(), Arc::clone(&list)));
        list
    }
}
