//! The event bus: a broadcast stream for subscribers, and listeners on threads of their own
//! behind bounded queues, so that no receiver can hold a check.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::{broadcast, mpsc};

use super::Registry;
use crate::event::{Event, Listener, LISTENER_QUEUE};
use crate::sync::{read, write};
use crate::Error;

/// Where the registry's events go.
pub(crate) struct Bus {
    events: broadcast::Sender<Event>,
    listeners: RwLock<Vec<ListenerSlot>>,
}

impl Bus {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            events: broadcast::channel(capacity.max(1)).0,
            listeners: RwLock::new(Vec::new()),
        }
    }

    /// Sends `event` to every subscriber and listener; never waits.
    pub(crate) fn emit(&self, event: &Event) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(event.clone());
        }
        for listener in read(&self.listeners).iter() {
            listener.send(event);
        }
    }
}

impl Registry {
    /// A stream of every event from now on. A receiver that falls behind by more than the
    /// builder's `event_capacity` loses the oldest events (and is told so).
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.bus.events.subscribe()
    }

    /// Adds a listener; see [`Listener`] for why it cannot hurt the engine.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if the operating system refused a thread for it.
    pub fn add_listener(&self, listener: impl Listener) -> Result<(), Error> {
        let slot = ListenerSlot::start(Arc::new(listener))
            .map_err(|e| Error::invalid(format!("cannot start a listener thread: {e}")))?;
        write(&self.inner.bus.listeners).push(slot);
        Ok(())
    }

    /// Events dropped because a listener was too slow to take them, over all listeners.
    #[must_use]
    pub fn dropped_listener_events(&self) -> u64 {
        read(&self.inner.bus.listeners)
            .iter()
            .map(ListenerSlot::dropped)
            .sum()
    }
}

/// The registry's side of one listener.
#[derive(Debug)]
pub(crate) struct ListenerSlot {
    queue: mpsc::Sender<Event>,
    dropped: Arc<AtomicU64>,
}

impl ListenerSlot {
    pub(crate) fn start(listener: Arc<dyn Listener>) -> std::io::Result<Self> {
        let (queue, mut events) = mpsc::channel::<Event>(LISTENER_QUEUE);
        std::thread::Builder::new()
            .name("status-listener".to_owned())
            .spawn(move || {
                while let Some(event) = events.blocking_recv() {
                    let delivered = catch_unwind(AssertUnwindSafe(|| deliver(&*listener, &event)));
                    if delivered.is_err() {
                        tracing::error!(?listener, "a status listener panicked; it is kept");
                    }
                }
            })?;
        Ok(Self {
            queue,
            dropped: Arc::new(AtomicU64::new(0)),
        })
    }

    pub(crate) fn send(&self, event: &Event) {
        if self.queue.try_send(event.clone()).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

fn deliver(listener: &dyn Listener, event: &Event) {
    match event {
        Event::Added(info) => listener.on_added(info),
        Event::Removed(id) => listener.on_removed(id),
        Event::Checked { result, outcome } => listener.on_checked(result, *outcome),
        Event::Changed { previous, current } => listener.on_changed(*previous, current),
        Event::Feature { state, flip } => listener.on_feature(state, flip.as_ref()),
        Event::Drain(drain) => listener.on_drain(drain.as_ref()),
        Event::Mutes => listener.on_mutes(),
        Event::Released { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Stuck(std::sync::Mutex<()>);

    impl Listener for Stuck {
        fn on_removed(&self, _: &crate::DependencyId) {
            let _held = self.0.lock();
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }

    #[test]
    fn a_stuck_listener_loses_events_instead_of_blocking() {
        let bus = Bus::new(4);
        write(&bus.listeners)
            .push(ListenerSlot::start(Arc::new(Stuck(std::sync::Mutex::new(())))).unwrap());
        let id = crate::DependencyId::new("a").unwrap();
        let mut subscriber = bus.events.subscribe();
        for _ in 0..LISTENER_QUEUE + 10 {
            bus.emit(&Event::Removed(id.clone()));
        }
        let dropped: u64 = read(&bus.listeners).iter().map(ListenerSlot::dropped).sum();
        assert!(dropped >= 9, "dropped {dropped}");
        assert!(matches!(
            subscriber.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
    }
}
