//! The rotation holds in force, and the registry's drain and readiness API.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::Registry;
use crate::event::Event;
use crate::feature::validate_ttl_and_reason;
use crate::sync::lock;
use crate::{DrainState, Error, HoldSource, Readiness, RotationHold, SystemReport};

/// The holds in force, one per source.
#[derive(Default)]
pub(crate) struct Rotation {
    holds: Mutex<BTreeMap<HoldSource, RotationHold>>,
    /// Bumped by every change, expiry included, so renderers know when to render again.
    generation: AtomicU64,
    /// Whether a cull hold may be in force: liveness reads it on every probe, without the
    /// lock (a cull hold that ran out is found on the next look under it).
    culled: AtomicBool,
}

impl Rotation {
    /// Sets `source`'s hold, replacing its previous one only.
    fn set(&self, hold: RotationHold) {
        if hold.source == HoldSource::Cull {
            self.culled.store(true, Ordering::Release);
        }
        lock(&self.holds).insert(hold.source, hold);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Clears `source`'s hold; whether there was one in force.
    fn clear(&self, source: HoldSource, now: Instant) -> bool {
        let was = lock(&self.holds).remove(&source);
        if source == HoldSource::Cull {
            self.culled.store(false, Ordering::Release);
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
        was.is_some_and(|h| !h.is_over(now))
    }

    /// The holds in force at `now`, most final first. A read: a hold that ran out is left
    /// out, never dropped (the watchdog does that, [`expire`](Self::expire)).
    pub(crate) fn in_force(&self, now: Instant) -> Vec<RotationHold> {
        lock(&self.holds)
            .values()
            .filter(|h| !h.is_over(now))
            .cloned()
            .collect()
    }

    /// Drops the holds that ran out at `now`; whether any did. Only the watchdog calls it.
    pub(crate) fn expire(&self, now: Instant) -> bool {
        let mut holds = lock(&self.holds);
        let before = holds.len();
        holds.retain(|_, h| !h.is_over(now));
        let expired = before - holds.len();
        if expired > 0 {
            // What `generation` counted while they were over and kept, now counted for good:
            // the number a reader sees does not move.
            self.generation.fetch_add(expired as u64, Ordering::AcqRel);
            if !holds.contains_key(&HoldSource::Cull) {
                self.culled.store(false, Ordering::Release);
            }
        }
        expired > 0
    }

    /// A number that changes whenever the holds do, an expiry included the moment it comes
    /// (each hold over but not yet dropped counts one), without writing anything.
    pub(crate) fn generation(&self, now: Instant) -> u64 {
        let holds = lock(&self.holds);
        let over = holds.values().filter(|h| h.is_over(now)).count() as u64;
        self.generation.load(Ordering::Acquire) + over
    }
}

impl super::Inner {
    /// The holds in force: a read, that drops and announces nothing.
    pub(crate) fn holds(&self) -> Vec<RotationHold> {
        self.rotation.in_force(self.clock.now())
    }

    /// Drops the holds that ran out and announces the drain as it now stands: the watchdog's
    /// job, and no reader's.
    pub(crate) fn expire_holds(&self) {
        if self.rotation.expire(self.clock.now()) {
            self.bus
                .emit(&Event::Drain(DrainState::of(None, self.holds())));
        }
    }
}

impl Registry {
    /// Takes the instance out of rotation on behalf of `source`: readiness and summary fail
    /// until `ttl` ends (or for good with `None`) or [`release`](Self::release) is called
    /// for that source. Replaces that source's previous hold and no other.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] when `reason` is blank (invisible characters only count as blank)
    /// or longer than 1024 characters, `reason` or `actor` holds control characters, or `ttl` is
    /// under a second or over 7 days. Nothing changes on error.
    pub fn hold(
        &self,
        source: HoldSource,
        reason: &str,
        ttl: Option<Duration>,
        actor: Option<&str>,
    ) -> Result<RotationHold, Error> {
        match ttl {
            Some(ttl) => validate_ttl_and_reason(ttl, reason)?,
            // For good: no time to live to check (never a stand-in one).
            None => crate::text::reason(reason)?,
        }
        let actor = crate::text::actor(actor)?;
        let inner = &self.inner;
        let now = inner.clock.now();
        let since = inner.clock.wall_at(now);
        let hold = RotationHold {
            source,
            reason: reason.trim().to_owned(),
            actor,
            since,
            until: ttl.map(|ttl| since + ttl),
            deadline: ttl.map(|ttl| now + ttl),
        };
        inner.rotation.set(hold.clone());
        inner.bus.emit(&Event::Drain(self.drain_state()));
        Ok(hold)
    }

    /// Puts the instance back in rotation as far as `source` is concerned: its hold ends, the
    /// others stay. Answers whether `source` had a hold in force.
    pub fn release(&self, source: HoldSource) -> bool {
        self.clear_hold(source, None)
    }

    /// As [`release`](Self::release), by a person rather than the application: `actor`
    /// their name when they gave one. The audit trail names them ([`Event::Released`]).
    pub fn release_by(&self, source: HoldSource, actor: Option<&str>) -> bool {
        self.clear_hold(source, Some(actor))
    }

    fn clear_hold(&self, source: HoldSource, by: Option<Option<&str>>) -> bool {
        let inner = &self.inner;
        let was = inner.rotation.clear(source, inner.clock.now());
        if was {
            if let Some(actor) = by {
                inner.bus.emit(&Event::Released {
                    source,
                    actor: actor.map(str::to_owned),
                });
            }
            inner.bus.emit(&Event::Drain(self.drain_state()));
        }
        was
    }

    /// The holds in force, most final first.
    #[must_use]
    pub fn holds(&self) -> Vec<RotationHold> {
        self.inner.holds()
    }

    /// The culler's hold, if in force: liveness fails under it, so that orchestrators
    /// replace the instance. Costs an atomic load while there is none.
    #[must_use]
    pub fn cull_hold(&self) -> Option<RotationHold> {
        let rotation = &self.inner.rotation;
        if !rotation.culled.load(Ordering::Acquire) {
            return None;
        }
        // A read: a cull hold that ran out is left out; the watchdog clears the flag.
        self.holds()
            .into_iter()
            .find(|h| h.source == HoldSource::Cull)
    }

    /// A number that changes whenever the holds do (an expiry included, once noticed).
    #[must_use]
    pub fn rotation_generation(&self) -> u64 {
        let inner = &self.inner;
        inner.rotation.generation(inner.clock.now())
    }

    /// Starts draining the instance on an operator's behalf: the [`HoldSource::Operator`]
    /// hold (see [`hold`](Self::hold)). Answers with the drain, described by that hold.
    ///
    /// # Errors
    ///
    /// As [`hold`](Self::hold). Nothing changes on error.
    pub fn drain(
        &self,
        reason: &str,
        ttl: Option<Duration>,
        actor: Option<&str>,
    ) -> Result<DrainState, Error> {
        let hold = self.hold(HoldSource::Operator, reason, ttl, actor)?;
        let mut holds = self.holds();
        if !holds.contains(&hold) {
            holds.push(hold.clone()); // ran out already: a clock that jumped
        }
        Ok(DrainState::of(Some(&hold), holds).expect("holds it was given"))
    }

    /// Ends the operator's drain; a shutdown's or a cull's hold stays. Answers whether the
    /// operator had a drain in force.
    pub fn undrain(&self) -> bool {
        self.release(HoldSource::Operator)
    }

    /// As [`undrain`](Self::undrain), by a person: `actor` their name when they gave one.
    pub fn undrain_by(&self, actor: Option<&str>) -> bool {
        self.release_by(HoldSource::Operator, actor)
    }

    /// The instance's holds, described by the most final one; `None` in rotation.
    #[must_use]
    pub fn drain_state(&self) -> Option<DrainState> {
        DrainState::of(None, self.holds())
    }

    /// Whether the instance should receive traffic: startup done, not OUTAGE, no hold.
    #[must_use]
    pub fn readiness(&self) -> Readiness {
        self.readiness_strict(false)
    }

    /// As [`readiness`](Self::readiness); with `strict`, anything but OK fails it.
    #[must_use]
    pub fn readiness_strict(&self, strict: bool) -> Readiness {
        Readiness::judge(
            self.condition(),
            strict,
            self.startup_complete(),
            self.drain_state(),
            || self.report().culprit_sentences().collect(),
        )
    }

    /// As [`readiness_strict`](Self::readiness_strict), judged on `report` (one that leaves
    /// some dependencies out, say) instead of the whole system.
    #[must_use]
    pub fn readiness_of(&self, report: &SystemReport, strict: bool) -> Readiness {
        Readiness::judge(
            report.condition(),
            strict,
            self.startup_complete(),
            self.drain_state(),
            || report.culprit_sentences().collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;

    fn hold(source: HoldSource, deadline: Option<Instant>) -> RotationHold {
        RotationHold {
            source,
            reason: source.to_string(),
            actor: None,
            since: DateTime::UNIX_EPOCH,
            until: None,
            deadline,
        }
    }

    #[test]
    fn sources_hold_independently() {
        let rotation = Rotation::default();
        let now = Instant::now();
        rotation.set(hold(HoldSource::Operator, None));
        rotation.set(hold(HoldSource::Cull, None));
        assert!(rotation.clear(HoldSource::Operator, now));
        let left = rotation.in_force(now);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].source, HoldSource::Cull);
        assert!(
            !rotation.clear(HoldSource::Operator, now),
            "nothing left to clear"
        );
    }

    #[test]
    fn reads_leave_expired_holds_out_and_only_the_watchdog_drops_them() {
        let rotation = Rotation::default();
        let now = Instant::now();
        rotation.set(hold(
            HoldSource::Operator,
            Some(now + Duration::from_secs(1)),
        ));
        rotation.set(hold(HoldSource::Shutdown, None));
        let before = rotation.generation(now);
        let later = now + Duration::from_secs(2);
        // Reads: the expired hold is left out, the generation moves, nothing is written.
        let holds = rotation.in_force(later);
        assert_eq!(holds.len(), 1);
        assert_eq!(holds[0].source, HoldSource::Shutdown);
        let seen = rotation.generation(later);
        assert!(
            seen > before,
            "an expiry is a new generation the moment it comes"
        );
        assert_eq!(lock(&rotation.holds).len(), 2, "a read drops nothing");
        assert_eq!(
            rotation.generation(later),
            seen,
            "reading twice changes nothing"
        );
        // The watchdog drops it; the generation a reader sees does not move again.
        assert!(rotation.expire(later));
        assert_eq!(lock(&rotation.holds).len(), 1);
        assert_eq!(rotation.generation(later), seen);
        assert!(!rotation.expire(later));
    }
}
