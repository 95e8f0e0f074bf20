//! One voice for the fleet (feature `notify`): status-notify's [`Chorus`] over the fleet's
//! view and a voice lease in its store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use status_core::{CheckStatus, DependencyId};
use status_notify::{Chorus, FleetVoice, Recovered, Voice};

use crate::sync::lock;
use crate::{Fleet, FleetView, VoiceAsk, VoiceLease};

/// One notification per shared failure, for [`NotificationsBuilder::chorus`]
/// (status-notify's): a dependency failing on most of this instance's data center (by the
/// fleet's rule, [`FleetView::shared`]) is told once for the fleet, by whoever takes its
/// voice lease in the store first, with the fleet's figures (`primary-db OUTAGE on 47 of 50
/// in dc-1`); the others stay silent about it. The speaker renews its lease every tick and
/// tells the recovery once the failure is no longer shared and its own dependency is OK; if
/// it goes, its lease lapses (three TTLs) and a silent instance takes over.
///
/// Fails toward telling: a failure not (yet) shared after two beat periods, a stale view,
/// or a store that keeps no leases or cannot be reached, and the instance tells its own
/// notice, as without a fleet. Its own failures it always tells.
///
/// [`NotificationsBuilder::chorus`]: status_notify::NotificationsBuilder::chorus
#[derive(Debug, Clone)]
pub struct FleetChorus {
    fleet: Fleet,
    state: Arc<Mutex<Parts>>,
}

/// The failures this instance speaks for, and those it keeps silent about, with the level
/// told.
#[derive(Debug, Default)]
struct Parts {
    speaking: HashMap<DependencyId, CheckStatus>,
    silent: HashMap<DependencyId, CheckStatus>,
}

impl FleetChorus {
    /// The chorus of `fleet`'s instance.
    #[must_use]
    pub fn new(fleet: Fleet) -> Self {
        Self {
            fleet,
            state: Arc::default(),
        }
    }

    /// How long a voice lease lasts unrenewed: three TTLs.
    fn lease_ttl(&self) -> Duration {
        self.fleet.ttl() * 3
    }

    async fn ask(
        &self,
        id: &DependencyId,
        ask: VoiceAsk,
    ) -> Result<VoiceLease, status_core::Error> {
        let me = self.fleet.member().instance_id;
        let lease = self
            .fleet
            .store()
            .voice(id.as_str(), &me, ask, self.lease_ttl());
        match tokio::time::timeout(self.fleet.ttl() / 3, lease).await {
            Ok(answer) => answer,
            Err(_) => Err(status_core::Error::unavailable(
                "the fleet store did not answer in time",
            )),
        }
    }

    /// The figures of `id` at `level` across this instance's data center, if it is shared
    /// there now.
    fn shared(&self, view: &FleetView, id: &DependencyId, level: CheckStatus) -> Option<String> {
        let own = view.own.as_ref()?;
        view.shared(&own.datacenter, "", id.as_str(), level)?;
        Some(figures(view, &own.datacenter, id, level))
    }

    fn voice(&self, figures: String) -> FleetVoice {
        FleetVoice::new(figures, self.fleet.member().instance_id)
    }
}

/// `primary-db OUTAGE on 47 of 50 in dc-1`.
fn figures(view: &FleetView, dc: &str, id: &DependencyId, level: CheckStatus) -> String {
    let (failing, fresh) = view.datacenter(dc).map_or((0, 0), |d| {
        (d.failing_at_least(id.as_str(), level), d.fresh)
    });
    format!("{id} {level} on {failing} of {fresh} in {dc}")
}

impl Chorus for FleetChorus {
    fn changed<'a>(&'a self, id: &'a DependencyId, level: CheckStatus) -> BoxFuture<'a, Voice> {
        Box::pin(async move {
            // The others fail together, give or take a beat, and their failure reaches this
            // instance's counts at one of its next beats: wait up to two beat periods (two
            // thirds of the TTL) for the fleet to say the failure is shared, looking again
            // each time the view changes (no timer polls it). The notifier's driver asks
            // this beside its tick, which never waits for it.
            let deadline = tokio::time::Instant::now() + self.fleet.ttl() * 2 / 3;
            let figures = loop {
                let changed = self.fleet.view_changed();
                if let Some(figures) = self.shared(&self.fleet.view(), id, level) {
                    break Some(figures);
                }
                tokio::select! {
                    () = changed => {}
                    () = tokio::time::sleep_until(deadline) => {
                        break self.shared(&self.fleet.view(), id, level);
                    }
                }
            };
            let state_of = |speaking: bool| {
                let mut parts = lock(&self.state);
                parts.speaking.remove(id);
                parts.silent.remove(id);
                if speaking {
                    parts.speaking.insert(id.clone(), level);
                } else {
                    parts.silent.insert(id.clone(), level);
                }
            };
            let Some(figures) = figures else {
                let mut parts = lock(&self.state);
                parts.speaking.remove(id);
                parts.silent.remove(id);
                return Voice::Mine;
            };
            let me = self.fleet.member().instance_id;
            match self.ask(id, VoiceAsk::Claim).await {
                Ok(VoiceLease::Open(holder)) if holder == me => {
                    state_of(true);
                    Voice::Fleet(self.voice(figures))
                }
                Ok(VoiceLease::Open(_)) => {
                    state_of(false);
                    Voice::Silent
                }
                Ok(_) | Err(_) => {
                    tracing::warn!(
                        dependency = %id,
                        "the fleet's voice lease could not be taken: this instance tells the shared failure itself"
                    );
                    Voice::Mine
                }
            }
        })
    }

    fn recovered(&self) -> BoxFuture<'_, Vec<Recovered>> {
        Box::pin(async move {
            let (speaking, silent) = {
                let parts = lock(&self.state);
                (parts.speaking.clone(), parts.silent.clone())
            };
            let mut out = Vec::new();
            let view = self.fleet.view();
            for (id, from) in speaking {
                let own_failing = view.own.as_ref().is_some_and(|own| {
                    own.failing
                        .iter()
                        .any(|f| f.dependency.id == id.as_str() && f.impact != CheckStatus::Ok)
                });
                let still_shared = self.shared(&view, &id, CheckStatus::Minor).is_some();
                if view.stale || own_failing || still_shared {
                    // Still failing here or across the data center: the lease is renewed.
                    let _ = self.ask(&id, VoiceAsk::Claim).await;
                    continue;
                }
                let _ = self.ask(&id, VoiceAsk::Resolve).await;
                lock(&self.state).speaking.remove(&id);
                let dc = view.own.as_ref().map_or("", |o| o.datacenter.as_str());
                let figures = format!(
                    "{id} recovered: {}",
                    figures(&view, dc, &id, CheckStatus::Minor)
                );
                out.push(Recovered {
                    id,
                    from,
                    voice: self.voice(figures),
                });
            }
            for (id, level) in silent {
                match self.ask(&id, VoiceAsk::Peek).await {
                    // The speaker told the recovery: nothing more to wait for.
                    Ok(VoiceLease::Resolved(_)) => {
                        lock(&self.state).silent.remove(&id);
                    }
                    // The speaker went: this instance takes over, and tells the recovery
                    // when the fleet recovers.
                    Ok(VoiceLease::Free) => {
                        let me = self.fleet.member().instance_id;
                        if let Ok(VoiceLease::Open(holder)) =
                            self.ask(&id, VoiceAsk::TakeOver).await
                        {
                            if holder == me {
                                let mut parts = lock(&self.state);
                                parts.silent.remove(&id);
                                parts.speaking.insert(id, level);
                            }
                        }
                    }
                    Ok(VoiceLease::Open(_)) | Err(_) => {}
                }
            }
            out
        })
    }
}
