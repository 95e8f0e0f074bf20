//! One renderer of the dashboard's live part, shared by every open page.
//!
//! However many pages follow `/status/events`, each change is rendered once; the renders go
//! out through a watch channel. With nobody watching, nothing is rendered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use askama::Template;
use status_core::Event;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{watch, Notify};

use super::view::{self, Filter};
use super::DashboardState;
use super::Live;

/// How long the renderer waits after a change for more before rendering.
const DEBOUNCE: Duration = Duration::from_millis(200);
/// The least time between two renders.
const MIN_INTERVAL: Duration = Duration::from_millis(500);
/// How often the renderer refreshes timestamps when only checks ran.
const TIMESTAMPS_INTERVAL: Duration = Duration::from_secs(5);

/// The latest render of the live part, for every open page.
#[derive(Debug)]
pub(crate) struct LiveFeed {
    latest: watch::Sender<Option<Arc<str>>>,
    wake: Notify,
    running: AtomicBool,
}

impl LiveFeed {
    pub(crate) fn new() -> Self {
        Self {
            latest: watch::channel(None).0,
            wake: Notify::new(),
            running: AtomicBool::new(false),
        }
    }
}

/// Renders of the live part, the current one first; starts the renderer if needed.
pub(crate) fn subscribe(state: &Arc<DashboardState>) -> watch::Receiver<Option<Arc<str>>> {
    let feed = &state.feed;
    let mut renders = feed.latest.subscribe();
    renders.mark_changed();
    if !feed.running.swap(true, Ordering::AcqRel) {
        tokio::spawn(render_loop(Arc::downgrade(state), Arc::clone(feed)));
    }
    feed.wake.notify_one();
    renders
}

async fn render_loop(state: Weak<DashboardState>, feed: Arc<LiveFeed>) {
    let Some(mut changes) = state.upgrade().map(|s| s.registry.subscribe()) else {
        return;
    };
    loop {
        if feed.latest.receiver_count() == 0 {
            // Nobody watches: drop the render (it would age) and wait for a page.
            feed.latest.send_replace(None);
            feed.wake.notified().await;
            continue;
        }
        let Some(state) = state.upgrade() else { return };
        let view = view::build(
            &state.registry,
            Filter::default(),
            &state.present,
            &state.panels,
        );
        drop(state);
        match (Live { view: &view }).render() {
            Ok(html) => {
                feed.latest.send_replace(Some(Arc::from(html)));
            }
            Err(e) => tracing::error!("cannot render the dashboard: {e}"),
        }
        let rendered = tokio::time::Instant::now();
        // A change of status, feature or drain shows within half a second; checks that changed
        // nothing but their timestamps refresh the page every few seconds.
        let mut checked = false;
        loop {
            let timestamps_due = rendered + TIMESTAMPS_INTERVAL;
            tokio::select! {
                () = tokio::time::sleep_until(timestamps_due), if checked => break,
                change = changes.recv() => match change {
                    Ok(Event::Checked { .. }) => checked = true,
                    Ok(_) | Err(RecvError::Lagged(_)) => break,
                    Err(RecvError::Closed) => return,
                },
            }
        }
        tokio::time::sleep(DEBOUNCE).await;
        tokio::time::sleep_until(rendered + MIN_INTERVAL).await;
        while changes.try_recv().is_ok() {}
    }
}
