//! One voice for the fleet (feature `notify`): status-notify's [`Chorus`] over the fleet's
//! view and a voice lease in its store. The rules are [`ChorusTracker`]'s, pure; this module
//! only drives it on Tokio.

mod tracker;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use status_core::{CheckStatus, DependencyId};
use status_notify::{Chorus, Recovered, Voice};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

pub use self::tracker::{ChangeTicket, ChorusStep, ChorusTracker, LeaseCall};
use crate::{Fleet, VoiceAnswer};

/// One notification per shared failure and data center, for
/// [`NotificationsBuilder::chorus`] (status-notify's): a dependency failing on most of this
/// instance's data center (by the fleet's rule, [`FleetView::shared`](crate::FleetView::shared))
/// is told once for that data center, by whoever of it takes the voice lease of the data
/// center and the dependency in the store first, with its figures (`primary-db OUTAGE on 47
/// of 50 in dc-1`); the others of it stay silent about it. The speaker renews its lease every
/// tick and tells the recovery in its data center once the failure is no longer shared there
/// and its own dependency is OK, naming the data centers that still fail it; if it goes, its
/// lease lapses (three TTLs) and a silent instance takes over. Another data center failing
/// the same dependency has its own speaker, its own notice and its own recovery.
///
/// Fails toward telling: a failure not (yet) shared after two beat periods, a stale view,
/// or a store that keeps no leases or cannot be reached, and the instance tells its own
/// notice, as without a fleet. Its own failures it always tells. A lease no instance could
/// have written (one that would outlast every TTL) is free, counted (`forged_lease` in
/// [`FleetStats::rejected`](crate::FleetStats::rejected)) and logged: forged data silences
/// no one.
///
/// The rules are a pure [`ChorusTracker`]; this drives it in one task (started at the first
/// question), told each question, each change of the fleet's view and each answer of the
/// store, whose lease calls run beside it (each bounded by a third of the TTL) and report
/// back: nothing waits on the store while holding the rules.
///
/// [`NotificationsBuilder::chorus`]: status_notify::NotificationsBuilder::chorus
#[derive(Debug, Clone)]
pub struct FleetChorus {
    fleet: Fleet,
    asks: Arc<OnceLock<mpsc::UnboundedSender<Ask>>>,
}

/// A question for the driver's task.
#[derive(Debug)]
enum Ask {
    Changed {
        id: DependencyId,
        level: CheckStatus,
        reply: oneshot::Sender<Voice>,
    },
    Tick {
        reply: oneshot::Sender<Vec<Recovered>>,
    },
}

impl FleetChorus {
    /// The chorus of `fleet`'s instance.
    #[must_use]
    pub fn new(fleet: Fleet) -> Self {
        Self {
            fleet,
            asks: Arc::default(),
        }
    }

    /// Hands `ask` to the driver's task, started on first use (so on the caller's runtime).
    fn ask(&self, ask: Ask) {
        let asks = self.asks.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(drive(self.fleet.clone(), rx));
            tx
        });
        // Sent only while the task runs: it ends when every clone of this chorus is gone.
        let _ = asks.send(ask);
    }
}

impl Chorus for FleetChorus {
    fn changed<'a>(&'a self, id: &'a DependencyId, level: CheckStatus) -> BoxFuture<'a, Voice> {
        let (reply, voice) = oneshot::channel();
        self.ask(Ask::Changed {
            id: id.clone(),
            level,
            reply,
        });
        // A task gone (its runtime shutting down) says nothing: this instance tells.
        Box::pin(async move { voice.await.unwrap_or(Voice::Mine) })
    }

    fn recovered(&self) -> BoxFuture<'_, Vec<Recovered>> {
        let (reply, recovered) = oneshot::channel();
        self.ask(Ask::Tick { reply });
        Box::pin(async move { recovered.await.unwrap_or_default() })
    }
}

/// Drives the tracker: each question, each change of the view, each lease answer and each
/// deadline, and carries out the steps it answers.
async fn drive(fleet: Fleet, mut asks: mpsc::UnboundedReceiver<Ask>) {
    let member = fleet.member();
    let mut tracker =
        ChorusTracker::new(member.instance_id, member.datacenter, fleet.ttl() * 2 / 3);
    let (answer, mut answers) =
        mpsc::unbounded_channel::<(LeaseCall, Result<VoiceAnswer, status_core::Error>)>();
    let mut waiting: HashMap<ChangeTicket, oneshot::Sender<Voice>> = HashMap::new();
    loop {
        // A speaker tells the fleet's figures (its data center's, then the others' when it
        // recovers): on a fleet past the store's budget, it asks for the whole list.
        if tracker.speaking() {
            fleet.store().look();
        }
        // Made before the view is read, so that no change is missed.
        let viewed = fleet.view_changed();
        let deadline = tracker.deadline().map(Instant::from_std);
        let mut tick = None;
        tokio::select! {
            ask = asks.recv() => {
                let now = Instant::now().into_std();
                match ask {
                    None => return,
                    Some(Ask::Changed { id, level, reply }) => {
                        let ticket = tracker.changed(id, level, now, &fleet.view());
                        waiting.insert(ticket, reply);
                    }
                    Some(Ask::Tick { reply }) => {
                        tracker.tick(&fleet.view());
                        tick = Some((reply, Vec::new()));
                    }
                }
            }
            () = viewed => tracker.advance(Instant::now().into_std(), &fleet.view()),
            Some((call, answer)) = answers.recv() => {
                let lease = answer.map(|answer| {
                    if answer.forged {
                        fleet.forged_lease(call.datacenter(), call.dependency());
                    }
                    answer.lease
                });
                tracker.answered(call, lease);
            }
            () = sleep_until(deadline) => {
                tracker.advance(Instant::now().into_std(), &fleet.view());
            }
        }
        for step in tracker.steps() {
            match step {
                ChorusStep::Lease { ask, call } => {
                    let (store, answer) = (Arc::clone(fleet.store()), answer.clone());
                    let (me, ttl) = (fleet.member().instance_id, fleet.ttl());
                    tokio::spawn(async move {
                        let lease = store.voice(
                            call.datacenter(),
                            call.dependency().as_str(),
                            &me,
                            ask,
                            ttl * 3,
                        );
                        let lease = match tokio::time::timeout(ttl / 3, lease).await {
                            Ok(lease) => lease,
                            Err(_) => Err(status_core::Error::unavailable(
                                "the fleet store did not answer in time",
                            )),
                        };
                        let _ = answer.send((call, lease));
                    });
                }
                ChorusStep::Answer { ticket, voice } => {
                    if let Some(reply) = waiting.remove(&ticket) {
                        let _ = reply.send(voice);
                    }
                }
                ChorusStep::Recovered(recovered) => {
                    if let Some((_, told)) = &mut tick {
                        told.push(recovered);
                    }
                }
                ChorusStep::LeaseRefused(id) => tracing::warn!(
                    dependency = %id,
                    "the fleet's voice lease could not be taken: this instance tells the shared failure itself"
                ),
            }
        }
        if let Some((reply, told)) = tick {
            let _ = reply.send(told);
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}
