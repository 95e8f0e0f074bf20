//! Acts that hold across a fleet sharing one store: every few seconds the driver reads the
//! other instances' mutes and the mutes ended anywhere, and brings its registry in line
//! ([`kept::shared_acts`]): a mute (an announced maintenance's among them) set on one
//! instance holds on every one within a beat, and so does its end.

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::model::MuteRecord;

/// How often the fleet's acts are read.
pub(super) const SHARE_EVERY: Duration = Duration::from_secs(5);

impl Driver {
    /// Whether it is time to read the fleet's acts.
    pub(super) fn share_due(&self) -> bool {
        self.shared.store().is_open()
            && self.last_share.is_none_or(|at| at.elapsed() >= SHARE_EVERY)
    }

    /// Reads the fleet's acts and applies them; a store that fails is tried at the next beat
    /// (its failure is the `history` dependency's to say).
    pub(super) async fn share(&mut self) {
        self.last_share = Some(Instant::now());
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let store = self.shared.store();
        let (peers, ends) = match (store.peer_mutes().await, store.mute_ends().await) {
            (Ok(peers), Ok(ends)) => (peers, ends),
            (Err(e), _) | (_, Err(e)) => {
                tracing::debug!("the fleet's mutes cannot be read now: {e}");
                return;
            }
        };
        if peers.is_empty() && ends.is_empty() {
            return;
        }
        let now = registry.clock().wall();
        for act in kept::shared_acts(&kept::mutes(&registry), &peers, &ends, now) {
            match act {
                kept::Act::End(m) => {
                    registry.end_shared_mute(&m.dependency, m.set_at);
                }
                kept::Act::Take(m) => {
                    let taken = registry.share_mute(
                        &m.dependency,
                        &m.reason,
                        m.actor.as_deref(),
                        m.set_at,
                        m.start,
                        m.until,
                    );
                    if let Err(e) = taken {
                        tracing::warn!(dependency = %m.dependency, "another instance's mute cannot be taken: {e}");
                    }
                }
            }
        }
    }

    /// The registry's mutes changed: kept whole, and those gone before their end told to
    /// the fleet.
    pub(super) fn mutes_changed(&mut self, registry: &Registry) {
        let now = registry.clock().wall();
        let current: Vec<MuteRecord> = kept::mutes(registry);
        let ended = kept::ended_early(&self.mutes, &current, now);
        let mut ledger = self.shared.ledger();
        ledger.pending.mute_ends.extend(ended);
        ledger.pending.mutes = Some(current.clone());
        drop(ledger);
        self.mutes = current;
    }
}
