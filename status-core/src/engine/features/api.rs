//! The registry's feature API: add, look up, override, list.

// The feature table and its entries, as features/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

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
        let table = &inner.features;
        let _serial = lock(&table.evaluating);
        let requirements = inner.requirement_states(feature.requirements());
        let mut features = write(&table.features);
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
        let entry = self.inner.features.get(name).ok()?;
        Some(FeatureHandle { entry })
    }

    /// Every feature's state, sorted by name.
    #[must_use]
    pub fn features(&self) -> Vec<FeatureState> {
        read(&self.inner.features.features)
            .values()
            .map(|f| f.state())
            .collect()
    }

    /// The latest flips of the feature `name`, oldest first (at most
    /// [`FLIPS_KEPT`](crate::FLIPS_KEPT)).
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered.
    pub fn feature_flips(&self, name: &str) -> Result<Vec<FeatureFlip>, Error> {
        Ok(self.inner.features.get(name)?.flips())
    }

    /// Forces the feature `name` on or off until the override's TTL ends, replacing any
    /// override in force.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered; [`Error::is_invalid`] if the
    /// override's actor holds control characters; [`Error::is_no_runtime`] outside a Tokio
    /// runtime (the expiry needs a timer). Nothing changes on error.
    pub fn override_feature(
        &self,
        name: &str,
        over: &FeatureOverride,
    ) -> Result<FeatureState, Error> {
        let inner = &self.inner;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::no_runtime())?;
        let entry = inner.features.get(name)?;
        crate::text::actor(over.actor.as_deref())?;
        let deadline = inner.clock.now() + over.ttl;
        let (update, seq) = entry.set_override(over, inner.clock.wall());
        self.expire_override(&runtime, &entry, seq, deadline);
        let state = update.state.clone();
        inner.emit_feature(update);
        Ok(state)
    }

    /// Puts back an override kept from an earlier run (by a history), with its own times:
    /// set at `set_at` by `actor`, forcing `enabled` until `expires_at`. It is not a new
    /// flip: none is recorded, none is broadcast. Skipped (`Ok(None)`) when an override of
    /// `name` was set or cleared in this run (what an operator did since the start wins) or
    /// it has expired.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered; [`Error::is_invalid`] for
    /// a blank reason or an unprintable actor; [`Error::is_no_runtime`] outside a Tokio
    /// runtime. Nothing changes on error.
    pub fn restore_override(
        &self,
        name: &str,
        enabled: bool,
        reason: &str,
        actor: Option<&str>,
        set_at: chrono::DateTime<chrono::Utc>,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<FeatureState>, Error> {
        let inner = &self.inner;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::no_runtime())?;
        let entry = inner.features.get(name)?;
        crate::text::reason(reason)?;
        let actor = crate::text::actor(actor)?;
        let now = inner.clock.now();
        let wall = inner.clock.wall_at(now);
        let Ok(left) = (expires_at - wall).to_std() else {
            return Ok(None);
        };
        let over = crate::feature::ActiveOverride {
            enabled,
            reason: reason.trim().to_owned(),
            actor,
            set_at,
            expires_at,
        };
        let Some((state, seq)) = entry.restore_override(over, wall) else {
            return Ok(None);
        };
        self.expire_override(&runtime, &entry, seq, now + left);
        inner.emit_feature(FeatureUpdate {
            state: state.clone(),
            flip: None,
        });
        Ok(Some(state))
    }

    /// Ends override `seq` of `entry` at `deadline`, unless another replaced it by then.
    fn expire_override(
        &self,
        runtime: &tokio::runtime::Handle,
        entry: &Arc<FeatureEntry>,
        seq: u64,
        deadline: tokio::time::Instant,
    ) {
        let inner = &self.inner;
        let timer = runtime.spawn({
            let weak = Arc::downgrade(inner);
            let entry = Arc::clone(entry);
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
    }

    /// Ends the override of the feature `name`, if any, and answers with its state.
    ///
    /// # Errors
    ///
    /// [`Error::is_not_found`] if no such feature is registered.
    pub fn clear_override(&self, name: &str) -> Result<FeatureState, Error> {
        let inner = &self.inner;
        let entry = inner.features.get(name)?;
        match entry.clear_override(inner.clock.wall(), None) {
            Some(update) => {
                let state = update.state.clone();
                inner.emit_feature(update);
                Ok(state)
            }
            None => Ok(entry.state()),
        }
    }
}
