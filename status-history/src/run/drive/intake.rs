//! What the driver takes in: the registry's events, each turned into the recorder's calls;
//! the series already checked when it attaches; what it missed when it fell behind.

#[allow(clippy::wildcard_imports)]
use super::*;

impl Driver {
    /// Starts every series already checked at its level now (attached after a start).
    pub(super) fn seed(&mut self) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let now = self.wall();
        for result in registry.report().results() {
            if result.checked() {
                let blocked = result
                    .blocked_by()
                    .iter()
                    .map(|id| id.as_str().to_owned())
                    .collect();
                self.shared.ledger().recorder.changed(
                    &Series::dependency(result.id()),
                    now,
                    result.status(),
                    result.message(),
                    blocked,
                );
            }
        }
        self.observe(&registry, now);
        self.mutes_changed(&registry);
        self.shared.ledger().pending.overrides = Some(kept::overrides(&registry));
    }

    /// The system's and each group's level now.
    pub(super) fn observe(&mut self, registry: &Registry, now: i64) {
        let mut ledger = self.shared.ledger();
        ledger
            .recorder
            .observe(&Series::System, now, registry.condition());
        for group in registry.groups() {
            ledger.recorder.observe(
                &Series::Group(group.group().name().as_str().to_owned()),
                now,
                group.condition(),
            );
        }
    }

    pub(super) fn on_event(&mut self, event: &Event) {
        match event {
            Event::Checked { result, outcome } => {
                let failed = matches!(
                    outcome,
                    RunOutcome::Outage | RunOutcome::Timeout | RunOutcome::Panic
                );
                let us = u64::try_from(result.duration().as_micros()).unwrap_or(u64::MAX);
                // Events carry the result as checked; the mute is the registry's.
                let muted = result.mute().is_some()
                    || self
                        .registry
                        .upgrade()
                        .is_some_and(|r| r.muted(result.id().as_str()).is_some());
                self.shared.ledger().recorder.checked(
                    &Series::dependency(result.id()),
                    ms(result.timestamp()),
                    failed,
                    us,
                    muted,
                );
            }
            Event::Changed { current, .. } => {
                // A change of staleness is dated by the check it ages: date it now.
                let at = if current.stale() {
                    self.wall()
                } else {
                    ms(current.timestamp())
                };
                let blocked = current
                    .blocked_by()
                    .iter()
                    .map(|id| id.as_str().to_owned())
                    .collect();
                self.shared.ledger().recorder.changed(
                    &Series::dependency(current.id()),
                    at,
                    current.status(),
                    current.message(),
                    blocked,
                );
                if let Some(registry) = self.registry.upgrade() {
                    self.observe(&registry, at);
                }
            }
            Event::Removed(id) => {
                let now = self.wall();
                self.shared
                    .ledger()
                    .recorder
                    .stop(&Series::Dependency(id.as_str().to_owned()), now);
            }
            Event::Mutes => {
                if let Some(registry) = self.registry.upgrade() {
                    self.mutes_changed(&registry);
                }
            }
            Event::Feature { state, .. } => {
                let overrides = match self.registry.upgrade() {
                    Some(registry) => Some(kept::overrides(&registry)),
                    None => state.override_.is_none().then(Vec::new),
                };
                if overrides.is_some() {
                    self.shared.ledger().pending.overrides = overrides;
                }
            }
            Event::Drain(drain) => self.on_holds(drain.as_ref().map_or(&[][..], |d| &d.holds)),
            Event::Released { source, actor } => self.released.push((*source, actor.clone())),
            _ => {}
        }
    }

    /// Audits each hold taken or released, whoever took it (an operator, the culler,
    /// shutdown).
    pub(super) fn on_holds(&mut self, holds: &[status_core::RotationHold]) {
        let now = self.wall();
        let released = std::mem::take(&mut self.released);
        let (records, current) = kept::hold_changes(&self.holds, holds, now, &released);
        self.shared.ledger().pending.audit.extend(records);
        self.holds = current;
    }

    /// Takes in every event already queued.
    pub(super) fn drain(&mut self, events: &mut broadcast::Receiver<Event>) {
        loop {
            match events.try_recv() {
                Ok(event) => self.on_event(&event),
                Err(TryRecvError::Lagged(n)) => self.dropped(n),
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
    }

    pub(super) fn dropped(&mut self, n: u64) {
        self.shared.stats.dropped.fetch_add(n, Ordering::Relaxed);
        self.dropped_at = Some(Instant::now());
    }
}
