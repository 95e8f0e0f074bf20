//! Features at run time: the table of registered features, their atomic switches, overrides
//! with their expiry timers, and the registry's feature API. The model is in `crate::feature`.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use chrono::{DateTime, Utc};
use tokio::task::AbortHandle;

use super::{Inner, Registry};

mod api;
use crate::event::Event;
use crate::feature::{self, judge};
use crate::sync::{lock, read, write};
use crate::text::iso;
use crate::{
    ActiveOverride, Error, Feature, FeatureFlip, FeatureName, FeatureOverride, FeatureState,
    FlipCause, Requirement, RequirementState, FLIPS_KEPT,
};

/// The registered features.
#[derive(Default)]
pub(crate) struct FeatureTable {
    features: RwLock<BTreeMap<FeatureName, Arc<FeatureEntry>>>,
    /// One evaluation at a time, so that flips are recorded in the order results came.
    evaluating: Mutex<()>,
}

impl FeatureTable {
    pub(crate) fn len(&self) -> usize {
        read(&self.features).len()
    }

    fn get(&self, name: &str) -> Result<Arc<FeatureEntry>, Error> {
        read(&self.features)
            .get(name)
            .cloned()
            .ok_or_else(|| Error::unknown_feature(name))
    }
}

impl Inner {
    /// Where `requirements` stand now.
    fn requirement_states(&self, requirements: &[Requirement]) -> Vec<RequirementState> {
        let now = self.clock.now();
        feature::evaluate(
            requirements,
            |id| self.deps.status_of(id, now),
            || self.deps.condition(),
        )
    }

    /// Re-evaluates every feature's requirements; emits what changed.
    pub(crate) fn reevaluate_features(&self) {
        let table = &self.features;
        let _serial = lock(&table.evaluating);
        let features: Vec<_> = read(&table.features).values().cloned().collect();
        if features.is_empty() {
            return;
        }
        let wall = self.clock.wall();
        for feature in features {
            let requirements = self.requirement_states(feature.feature.requirements());
            if let Some(update) = feature.reevaluate(requirements, wall) {
                self.emit_feature(update);
            }
        }
    }

    fn emit_feature(&self, update: FeatureUpdate) {
        self.bus.emit(&Event::Feature {
            state: Arc::new(update.state),
            flip: update.flip,
        });
    }
}

/// A registered feature, to ask whether it is enabled. Cheap to clone.
///
/// [`is_enabled`](Self::is_enabled) is a single atomic load: call it on every request.
#[derive(Clone)]
pub struct FeatureHandle {
    pub(crate) entry: Arc<FeatureEntry>,
}

impl FeatureHandle {
    /// Whether the feature is on now.
    #[must_use]
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.entry.enabled.load(Ordering::Acquire)
    }

    /// The feature's name.
    #[must_use]
    pub fn name(&self) -> &FeatureName {
        self.entry.feature.name()
    }

    /// Its full state.
    #[must_use]
    pub fn state(&self) -> FeatureState {
        self.entry.state()
    }
}

impl fmt::Debug for FeatureHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FeatureHandle")
            .field("name", &self.entry.feature.name())
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

pub(crate) struct FeatureEntry {
    pub(crate) feature: Feature,
    enabled: AtomicBool,
    state: Mutex<FeatureMut>,
}

struct FeatureMut {
    automatic: bool,
    reason: String,
    requirements: Vec<RequirementState>,
    over: Option<ActiveOverride>,
    /// Bumped by every override set or cleared, so a late expiry timer knows it is outdated.
    override_seq: u64,
    expiry: Option<AbortHandle>,
    flips: VecDeque<FeatureFlip>,
    since: DateTime<Utc>,
    /// Whether an override was set or cleared in this run: a kept one is then not put back.
    touched: bool,
}

/// What changed in a feature, if anything.
pub(crate) struct FeatureUpdate {
    pub(crate) state: FeatureState,
    pub(crate) flip: Option<FeatureFlip>,
}

impl FeatureEntry {
    pub(crate) fn new(
        feature: Feature,
        requirements: Vec<RequirementState>,
        now: DateTime<Utc>,
    ) -> Self {
        let (automatic, reason) = judge(&requirements);
        Self {
            feature,
            enabled: AtomicBool::new(automatic),
            state: Mutex::new(FeatureMut {
                automatic,
                reason,
                requirements,
                over: None,
                override_seq: 0,
                expiry: None,
                flips: VecDeque::new(),
                since: now,
                touched: false,
            }),
        }
    }

    pub(crate) fn state(&self) -> FeatureState {
        let m = lock(&self.state);
        self.state_of(&m)
    }

    fn state_of(&self, m: &FeatureMut) -> FeatureState {
        let reason = match &m.over {
            Some(o) => format!(
                "forced {} until {}: {}",
                on_off(o.enabled),
                iso(o.expires_at),
                o.reason
            ),
            None => m.reason.clone(),
        };
        FeatureState {
            name: self.feature.name().clone(),
            description: self.feature.description().to_owned(),
            enabled: self.enabled.load(Ordering::Acquire),
            automatic: m.automatic,
            reason,
            requirements: m.requirements.clone(),
            override_: m.over.clone(),
            since: m.since,
        }
    }

    pub(crate) fn flips(&self) -> Vec<FeatureFlip> {
        lock(&self.state).flips.iter().cloned().collect()
    }

    /// Takes new requirement states; `None` when nothing an observer sees changed.
    pub(crate) fn reevaluate(
        &self,
        requirements: Vec<RequirementState>,
        now: DateTime<Utc>,
    ) -> Option<FeatureUpdate> {
        let mut m = lock(&self.state);
        if m.requirements == requirements {
            return None;
        }
        let (automatic, reason) = judge(&requirements);
        m.requirements = requirements;
        m.automatic = automatic;
        m.reason.clone_from(&reason);
        Some(self.settle(&mut m, now, FlipCause::Automatic, reason))
    }

    /// Sets an override; returns the update and the sequence number its expiry must match.
    pub(crate) fn set_override(
        &self,
        over: &FeatureOverride,
        now: DateTime<Utc>,
    ) -> (FeatureUpdate, u64) {
        let mut m = lock(&self.state);
        m.touched = true;
        m.override_seq += 1;
        if let Some(previous) = m.expiry.take() {
            previous.abort();
        }
        m.over = Some(ActiveOverride {
            enabled: over.enabled,
            reason: over.reason.clone(),
            actor: over.actor.clone(),
            set_at: now,
            expires_at: now + over.ttl,
        });
        let who = over.actor.as_deref().unwrap_or("an operator");
        let reason = format!("forced {} by {who}: {}", on_off(over.enabled), over.reason);
        (
            self.settle(&mut m, now, FlipCause::Override, reason),
            m.override_seq,
        )
    }

    /// Puts back `over`, an override kept from an earlier run, with its own times, unless
    /// one was set or cleared in this run; no flip is recorded (it was, when it was set).
    /// Answers the state and the override's sequence number, or `None` when skipped.
    pub(crate) fn restore_override(
        &self,
        over: ActiveOverride,
        now: DateTime<Utc>,
    ) -> Option<(FeatureState, u64)> {
        let mut m = lock(&self.state);
        if m.touched {
            return None;
        }
        m.override_seq += 1;
        let effective = over.enabled;
        m.over = Some(over);
        if self.enabled.swap(effective, Ordering::AcqRel) != effective {
            m.since = now;
        }
        Some((self.state_of(&m), m.override_seq))
    }

    /// Keeps the expiry timer of override `seq`, or stops it if that override is gone.
    pub(crate) fn attach_expiry(&self, seq: u64, timer: AbortHandle) {
        let mut m = lock(&self.state);
        if m.override_seq == seq && m.over.is_some() {
            m.expiry = Some(timer);
        } else {
            timer.abort();
        }
    }

    /// Clears the override (if `seq` is given, only the override with that sequence number).
    pub(crate) fn clear_override(
        &self,
        now: DateTime<Utc>,
        seq: Option<u64>,
    ) -> Option<FeatureUpdate> {
        let mut m = lock(&self.state);
        if seq.is_none() {
            m.touched = true;
        }
        if m.over.is_none() || seq.is_some_and(|s| s != m.override_seq) {
            return None;
        }
        m.over = None;
        m.override_seq += 1;
        let cause = if seq.is_some() {
            FlipCause::OverrideExpired
        } else {
            if let Some(timer) = m.expiry.take() {
                timer.abort();
            }
            FlipCause::OverrideCleared
        };
        m.expiry = None;
        let reason = m.reason.clone();
        Some(self.settle(&mut m, now, cause, reason))
    }

    /// Stores the effective state; records a flip when it changed.
    fn settle(
        &self,
        m: &mut FeatureMut,
        now: DateTime<Utc>,
        cause: FlipCause,
        reason: String,
    ) -> FeatureUpdate {
        let effective = m.over.as_ref().map_or(m.automatic, |o| o.enabled);
        let was = self.enabled.swap(effective, Ordering::AcqRel);
        let flip = (was != effective).then(|| {
            m.since = now;
            let flip = FeatureFlip {
                feature: self.feature.name().clone(),
                at: now,
                enabled: effective,
                cause,
                reason,
            };
            if m.flips.len() == FLIPS_KEPT {
                m.flips.pop_front();
            }
            m.flips.push_back(flip.clone());
            flip
        });
        FeatureUpdate {
            state: self.state_of(m),
            flip,
        }
    }
}

impl Drop for FeatureEntry {
    fn drop(&mut self) {
        if let Some(timer) = lock(&self.state).expiry.take() {
            timer.abort();
        }
    }
}

fn on_off(enabled: bool) -> &'static str {
    if enabled {
        "on"
    } else {
        "off"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CheckStatus;

    fn entry() -> FeatureEntry {
        let feature = Feature::builder("f")
            .requires("a", CheckStatus::Minor)
            .build()
            .unwrap();
        let met = feature::evaluate(
            feature.requirements(),
            |_| Some(CheckStatus::Ok),
            || CheckStatus::Ok,
        );
        FeatureEntry::new(feature, met, DateTime::UNIX_EPOCH)
    }

    #[test]
    fn an_override_wins_until_cleared_and_flips_are_recorded() {
        let entry = entry();
        assert!(entry.enabled.load(Ordering::Acquire));
        let over = FeatureOverride::new(false, std::time::Duration::from_secs(60), "test").unwrap();
        let (update, seq) = entry.set_override(&over, DateTime::UNIX_EPOCH);
        assert!(!update.state.enabled);
        assert_eq!(update.flip.unwrap().cause, FlipCause::Override);
        // A stale expiry (another sequence number) changes nothing.
        assert!(entry
            .clear_override(DateTime::UNIX_EPOCH, Some(seq + 1))
            .is_none());
        let cleared = entry.clear_override(DateTime::UNIX_EPOCH, None).unwrap();
        assert!(cleared.state.enabled);
        assert_eq!(entry.flips().len(), 2);
    }

    #[test]
    fn unchanged_requirements_are_not_an_update() {
        let entry = entry();
        let same = entry.state().requirements;
        assert!(entry.reevaluate(same, DateTime::UNIX_EPOCH).is_none());
    }
}
