//! [`Observer`]: one intake for every consumer of the registry, each change with the facts
//! it is read against.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::{Registry, WeakRegistry};
use crate::{Event, Facts};

/// What an [`Observer`] hands over next.
#[derive(Debug, Clone)]
pub enum Observed {
    /// A change, with the facts current when it is read (never older than the change).
    Event {
        /// The change.
        event: Event,
        /// What is true now.
        facts: Arc<Facts>,
    },
    /// The observer fell behind and lost `missed` changes: what is true now stands for
    /// them, so that a consumer renders the present instead of leaving a gap.
    Lagged {
        /// How many changes were lost.
        missed: u64,
        /// What is true now.
        facts: Arc<Facts>,
    },
}

impl Observed {
    /// The facts handed over.
    #[must_use]
    pub fn facts(&self) -> &Arc<Facts> {
        match self {
            Self::Event { facts, .. } | Self::Lagged { facts, .. } => facts,
        }
    }

    /// The change, unless changes were lost.
    #[must_use]
    pub fn event(&self) -> Option<&Event> {
        match self {
            Self::Event { event, .. } => Some(event),
            Self::Lagged { .. } => None,
        }
    }
}

/// A consumer's intake of the registry ([`Registry::observe`]): each change with the
/// [`Facts`] current when it is read; after a lag, the facts alone. Does not keep the
/// registry alive: it ends (`None`) when the registry is dropped.
#[derive(Debug)]
pub struct Observer {
    events: broadcast::Receiver<Event>,
    registry: WeakRegistry,
}

impl Observer {
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            events: registry.subscribe(),
            registry: registry.downgrade(),
        }
    }

    /// The next change, waiting for it; `None` once the registry is gone.
    pub async fn next(&mut self) -> Option<Observed> {
        let got = self.events.recv().await;
        self.read(got)
    }

    /// The next change if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<Observed> {
        match self.events.try_recv() {
            Err(broadcast::error::TryRecvError::Empty) => None,
            Ok(event) => self.read(Ok(event)),
            Err(broadcast::error::TryRecvError::Lagged(n)) => {
                self.read(Err(broadcast::error::RecvError::Lagged(n)))
            }
            Err(broadcast::error::TryRecvError::Closed) => {
                self.read(Err(broadcast::error::RecvError::Closed))
            }
        }
    }

    fn read(&self, got: Result<Event, broadcast::error::RecvError>) -> Option<Observed> {
        let registry = self.registry.upgrade()?;
        match got {
            Ok(event) => Some(Observed::Event {
                event,
                facts: registry.facts(),
            }),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "an observer of the registry fell behind; it is handed what is true now"
                );
                Some(Observed::Lagged {
                    missed,
                    facts: registry.facts(),
                })
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}
