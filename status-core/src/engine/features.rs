//! The registry's features, their overrides, and draining.

use std::sync::Arc;
use std::time::Duration;

use super::{lock, read, write, Registry};
use crate::event::Event;
use crate::feature::{validate_ttl_and_reason, FeatureEntry, FeatureFlip, FeatureHandle};
use crate::{DrainState, Error, Feature, FeatureOverride, FeatureState, Requirement};

impl Registry {
    /// Registers `feature` and evaluates it at once.
    ///
    /// # Errors
    ///
    /// [`Error::is_duplicate`] if its name is taken; [`Error::is_not_found`] if it requires a
    /// dependency that is not registered.
    pub fn add_feature(&self, feature: Feature) -> Result<FeatureHandle, Error> {
        let inner = &self.inner;
        for requirement in feature.requirements() {
            if let Requirement::Dependency { id, .. } = requirement {
                if !self.contains(id.as_str()) {
                    return Err(Error::unknown_dependency(id.as_str()));
                }
            }
        }
        let _serial = lock(&inner.evaluating_features);
        let requirements = inner.requirement_states(feature.requirements());
        let mut features = write(&inner.features);
        if features.contains_key(feature.name()) {
            return Err(Error::duplicate("feature", feature.name().as_str()));
        }
        let name = feature.name().clone();
        let entry = Arc::new(FeatureEntry::new(feature, requirements, inner.clock.wall()));
        features.insert(name, Arc::clone(&entry));
        Ok(FeatureHandle { entry })
    }

    /// The feature `name`.
    #[must_use]
    pub fn feature(&self, name: &str) -> Option<FeatureHandle> {
        read(&self.inner.features)
            .get(name)
            .map(|entry| FeatureHandle {
                entry: Arc::clone(entry),
            })
    }

    /// Every feature's state, sorted by name.
    #[must_use]
    pub fn features(&self) -> Vec<FeatureState> {
        read(&self.inner.features)
            .values()
            .map(|f| f.state())
            .collect()
    }

    /// The latest flips of the feature `name`, oldest first (at most
    /// [`FLIPS_KEPT`](crate::feature::FLIPS_KEPT)).
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered.
    pub fn feature_flips(&self, name: &str) -> Result<Vec<FeatureFlip>, Error> {
        Ok(self.inner.feature_entry(name)?.flips())
    }

    /// Forces the feature `name` on or off until the override's TTL ends, replacing any
    /// override in force.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered; [`Error::is_no_runtime`]
    /// outside a Tokio runtime (the expiry needs a timer). Nothing changes on error.
    pub fn override_feature(
        &self,
        name: &str,
        over: &FeatureOverride,
    ) -> Result<FeatureState, Error> {
        let inner = &self.inner;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::no_runtime())?;
        let entry = inner.feature_entry(name)?;
        let deadline = inner.clock.now() + over.ttl;
        let (update, seq) = entry.set_override(over, inner.clock.wall());
        let timer = runtime.spawn({
            let weak = Arc::downgrade(inner);
            let entry = Arc::clone(&entry);
            let clock = inner.clock.clone();
            async move {
                clock.sleep_until(deadline).await;
                let Some(inner) = weak.upgrade() else { return };
                if let Some(update) = entry.clear_override(inner.clock.wall(), Some(seq)) {
                    inner.emit_feature(update);
                }
            }
        });
        entry.attach_expiry(seq, timer.abort_handle());
        let state = update.state.clone();
        inner.emit_feature(update);
        Ok(state)
    }

    /// Ends the override of the feature `name`, if any, and answers with its state.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered.
    pub fn clear_override(&self, name: &str) -> Result<FeatureState, Error> {
        let inner = &self.inner;
        let entry = inner.feature_entry(name)?;
        match entry.clear_override(inner.clock.wall(), None) {
            Some(update) => {
                let state = update.state.clone();
                inner.emit_feature(update);
                Ok(state)
            }
            None => Ok(entry.state()),
        }
    }

    /// Starts draining the instance: readiness and summary fail until `ttl` ends (or for good
    /// with `None`, as during shutdown) or [`undrain`](Self::undrain) is called. Replaces any
    /// drain in force.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `reason` is blank or longer than 1024 bytes, or `ttl` is
    /// under a second or over 7 days. Nothing changes on error.
    pub fn drain(
        &self,
        reason: &str,
        ttl: Option<Duration>,
        actor: Option<&str>,
    ) -> Result<DrainState, Error> {
        validate_ttl_and_reason(ttl.unwrap_or(Duration::from_secs(1)), reason)?;
        let inner = &self.inner;
        let now = inner.clock.now();
        let since = inner.clock.wall_at(now);
        let state = DrainState {
            reason: reason.trim().to_owned(),
            actor: actor.map(|a| a.chars().take(128).collect()),
            since,
            until: ttl.map(|ttl| since + ttl),
            deadline: ttl.map(|ttl| now + ttl),
        };
        *lock(&inner.drain) = Some(state.clone());
        inner.emit(&Event::Drain(Some(state.clone())));
        Ok(state)
    }

    /// Stops draining. Answers whether a drain was in force.
    pub fn undrain(&self) -> bool {
        let was = lock(&self.inner.drain).take();
        let was_active = was.is_some_and(|d| !d.is_over(self.inner.clock.now()));
        if was_active {
            self.inner.emit(&Event::Drain(None));
        }
        was_active
    }

    /// The drain in force, if any.
    #[must_use]
    pub fn drain_state(&self) -> Option<DrainState> {
        self.inner.drain_state()
    }
}
