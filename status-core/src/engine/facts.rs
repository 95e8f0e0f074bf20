//! The registry's [`Facts`]: built once per report and rotation generation, shared by every
//! consumer that asks for the same one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::observe::Observer;
use super::Registry;
use crate::facts::{Facts, Sources};
use crate::sync::lock;
use crate::ServePolicy;

/// The last facts built, and what they were built from.
#[derive(Default)]
pub(crate) struct FactsCache {
    last: Mutex<Option<Arc<Facts>>>,
    rotation: AtomicU64,
    generation: AtomicU64,
}

impl Registry {
    /// What is true of the registry now, computed once per report generation (and rotation
    /// change) and shared: the one source of membership, impact, mutes, maintenance and the
    /// serving verdict for every consumer. See [`Facts`].
    #[must_use]
    pub fn facts(&self) -> Arc<Facts> {
        let inner = &self.inner;
        let report = self.report();
        let rotation = self.rotation_generation();
        let mut last = lock(&inner.facts.last);
        if let Some(facts) = last.as_ref() {
            if Arc::ptr_eq(facts.report(), &report)
                && inner.facts.rotation.load(Ordering::Relaxed) == rotation
            {
                return Arc::clone(facts);
            }
        }
        let bits = report
            .results()
            .iter()
            .map(|r| {
                inner
                    .deps
                    .get(r.id().as_str())
                    .map_or(0, |e| e.counted.groups.load(Ordering::Relaxed))
            })
            .collect();
        let groups = inner
            .deps
            .groups()
            .iter()
            .map(|g| (g.group.clone(), g.startup_complete()))
            .collect();
        let facts = Arc::new(Facts::build(Sources {
            generation: inner.facts.generation.fetch_add(1, Ordering::Relaxed) + 1,
            report,
            bits,
            groups,
            policy: inner.config.serve_policy,
            drain: self.drain_state(),
        }));
        inner.facts.rotation.store(rotation, Ordering::Relaxed);
        *last = Some(Arc::clone(&facts));
        facts
    }

    /// One intake for a consumer: each change from now on with the [`Facts`] it is read
    /// against, and after a lag the facts alone, instead of a gap. See [`Observer`].
    #[must_use]
    pub fn observe(&self) -> Observer {
        Observer::new(self)
    }

    /// Which system levels serve traffic; see [`RegistryBuilder::serve_policy`].
    ///
    /// [`RegistryBuilder::serve_policy`]: crate::RegistryBuilder::serve_policy
    #[must_use]
    pub fn serve_policy(&self) -> ServePolicy {
        self.inner.config.serve_policy
    }
}
