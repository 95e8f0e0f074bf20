//! Events of the registry: a broadcast stream, and listeners that cannot hurt the engine.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::engine::Outcome;
use crate::feature::{FeatureFlip, FeatureState};
use crate::{CheckResult, CheckStatus, DependencyId, DependencyInfo, DrainState};

/// Events queued for one listener before new ones are dropped.
pub const LISTENER_QUEUE: usize = 4096;

/// Something that happened in the registry.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Event {
    /// A dependency was registered.
    Added(Arc<DependencyInfo>),
    /// A dependency was removed.
    Removed(DependencyId),
    /// A check finished.
    Checked {
        /// The recorded result.
        result: Arc<CheckResult>,
        /// How the check ended.
        outcome: Outcome,
    },
    /// A dependency's reported status, or its staleness, changed.
    Changed {
        /// The status before; `None` for the first check.
        previous: Option<CheckStatus>,
        /// The result now.
        current: Arc<CheckResult>,
    },
    /// A feature's state or override changed.
    Feature {
        /// The state now.
        state: Arc<FeatureState>,
        /// The flip, when it was switched on or off.
        flip: Option<FeatureFlip>,
    },
    /// The instance started or stopped draining.
    Drain(Option<DrainState>),
}

/// Reacts to the registry's events.
///
/// Each listener runs on a thread of its own, fed by a bounded queue: a slow listener only
/// falls behind (and loses events past [`LISTENER_QUEUE`]), a panicking one is logged and
/// kept; neither delays a check.
///
/// # Example
///
/// ```
/// use status_core::{CheckResult, CheckStatus, Listener};
///
/// #[derive(Debug)]
/// struct Pager;
///
/// impl Listener for Pager {
///     fn on_changed(&self, previous: Option<CheckStatus>, current: &CheckResult) {
///         if current.status == CheckStatus::Outage {
///             eprintln!("page: {} is down (was {previous:?})", current.id);
///         }
///     }
/// }
/// ```
pub trait Listener: Send + Sync + fmt::Debug + 'static {
    /// A dependency was registered.
    fn on_added(&self, _info: &DependencyInfo) {}
    /// A dependency was removed.
    fn on_removed(&self, _id: &DependencyId) {}
    /// A check finished.
    fn on_checked(&self, _result: &CheckResult, _outcome: Outcome) {}
    /// A dependency's reported status or staleness changed.
    fn on_changed(&self, _previous: Option<CheckStatus>, _current: &CheckResult) {}
    /// A feature changed.
    fn on_feature(&self, _state: &FeatureState, _flip: Option<&FeatureFlip>) {}
    /// The instance started (`Some`) or stopped (`None`) draining.
    fn on_drain(&self, _drain: Option<&DrainState>) {}
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
    }
}
