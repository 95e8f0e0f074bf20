//! The driver: the registry's changes into the [`Notifier`], its notices out as messages.
//!
//! Its tick never awaits I/O. What needs the outside runs beside it and reports back: the
//! chorus's judgement of each change (which may wait for the fleet to say a failure is
//! shared, and takes a lease in its store) and its recoveries, each in a task of its own;
//! incident links, looked up by a dispatcher that keeps the messages' order and looks up
//! many at once. So a burst of changes is told on time while the fleet's store or the
//! history is slow, and events never queue behind a lookup.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use status_core::{DependencyId, Event, Observed, Observer, Registry, WeakRegistry};
use tokio::sync::mpsc;

use crate::chorus::{Judgement, Voiced};
use crate::queue::{IncidentOf, OnTold, Queue, RecallTold, INCIDENT_PATIENCE, RECALL_PATIENCE};
use crate::{Chorus, FleetVoice, Message, Notice, Notifier, Recovered, Voice, SCHEMA_VERSION};

/// Messages waiting for their incident link at most; past it, a message goes without.
const OUTBOX: usize = 1024;

/// Incident links looked up at once, the messages still sent in order.
const LOOKUPS: usize = 64;

/// What the driver keeps.
pub(crate) struct Driver {
    pub(crate) registry: WeakRegistry,
    pub(crate) notifier: Notifier,
    pub(crate) recall: Option<RecallTold>,
    pub(crate) on_told: Option<OnTold>,
    pub(crate) queues: Vec<Arc<Queue>>,
    pub(crate) tick: Duration,
    pub(crate) id_prefix: String,
    pub(crate) incidents: Option<IncidentOf>,
    pub(crate) chorus: Option<Arc<dyn Chorus>>,
}

/// What the chorus answered, beside the tick.
enum Answer {
    /// Who tells this change.
    Voice(Notice, Voice),
    /// The fleet's recoveries this instance tells now.
    Recovered(Vec<Recovered>),
}

/// The driver's state between ticks.
struct Drive {
    registry: WeakRegistry,
    notifier: Notifier,
    on_told: Option<OnTold>,
    queues: Vec<Arc<Queue>>,
    id_prefix: String,
    sequence: u64,
    last_told: Option<crate::Told>,
    chorus: Option<Arc<dyn Chorus>>,
    voiced: Voiced,
    /// Dependencies whose change the chorus is judging, with the notices of theirs that
    /// came since (they go after it, in order).
    judging: HashMap<DependencyId, VecDeque<Notice>>,
    recovering: bool,
    answers: mpsc::UnboundedSender<Answer>,
    outbox: mpsc::Sender<Message>,
}

pub(crate) async fn drive(driver: Driver, mut changes: Observer, mut told: mpsc::Receiver<Notice>) {
    let Driver {
        registry,
        mut notifier,
        recall,
        on_told,
        queues,
        tick,
        id_prefix,
        incidents,
        chorus,
    } = driver;
    let mut last_told = None;
    if let Some(recall) = recall {
        match tokio::time::timeout(RECALL_PATIENCE, recall).await {
            Ok(Some(told)) => {
                if let Some(registry) = registry.upgrade() {
                    notifier.restore(&told, registry.clock().elapsed());
                }
                last_told = Some(told);
            }
            Ok(None) => {}
            Err(_) => tracing::warn!(
                "what was told before the restart did not come in time: notices start from nothing told"
            ),
        }
    }
    if let Some(registry) = registry.upgrade() {
        notifier.see_facts(&registry.facts(), registry.clock().elapsed());
    }
    let (answers, mut answered) = mpsc::unbounded_channel();
    let (outbox, letters) = mpsc::channel(OUTBOX);
    let dispatcher = tokio::spawn(dispatch(letters, incidents, queues.clone()));
    let mut drive = Drive {
        registry,
        notifier,
        on_told,
        queues,
        id_prefix,
        sequence: 0,
        last_told,
        chorus,
        voiced: Voiced::default(),
        judging: HashMap::new(),
        recovering: false,
        answers,
        outbox,
    };
    let mut ticks = tokio::time::interval(tick);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            Some(notice) = told.recv() => drive.notifier.tell(notice),
            change = changes.next() => {
                let Some(change) = change else { break };
                drive.see(&change);
            }
            Some(answer) = answered.recv() => drive.answered(answer),
            _ = ticks.tick() => {
                if !drive.tick() {
                    break;
                }
            }
        }
    }
    drop(drive);
    // The dispatcher sends what it holds, then the queues close.
    let _ = dispatcher.await;
}

impl Drive {
    /// Takes in one change, or the facts after a lag.
    fn see(&mut self, change: &Observed) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let now = registry.clock().elapsed();
        match change.event() {
            Some(Event::Checked { result, .. }) => self.notifier.see(result, now),
            Some(Event::Changed { current, .. }) => self.notifier.see(current, now),
            Some(Event::Removed(id)) => self.notifier.forget(id.as_str()),
            // A mute began or ended, or this task fell behind: everything again, from the
            // facts.
            Some(Event::Mutes) | None => self.notifier.see_facts(change.facts(), now),
            Some(_) => {}
        }
    }

    /// One tick: what the policy says is due, judged and sent; never waits. `false` once
    /// the registry is gone.
    fn tick(&mut self) -> bool {
        let Some(registry) = self.registry.upgrade() else {
            return false;
        };
        let now = registry.clock().elapsed();
        // Causes and maintenance as the facts have them now: a dependent checked before its
        // root failed learns it here, before it could be told alone.
        self.notifier.see_facts(&registry.facts(), now);
        for notice in self.notifier.tick(now) {
            self.judge(&registry, notice);
        }
        if let Some(chorus) = &self.chorus {
            if !self.recovering {
                self.recovering = true;
                let (chorus, answers) = (Arc::clone(chorus), self.answers.clone());
                tokio::spawn(async move {
                    let _ = answers.send(Answer::Recovered(chorus.recovered().await));
                });
            }
        }
        if let Some(on_told) = &self.on_told {
            let told = self.notifier.told();
            if self.last_told.as_ref() != Some(&told) {
                on_told(&told);
                self.last_told = Some(told);
            }
        }
        true
    }

    /// Sends `notice`, or asks the chorus about it beside the tick; a notice of a dependency
    /// being judged waits behind that judgement.
    fn judge(&mut self, registry: &Registry, notice: Notice) {
        let Some(chorus) = &self.chorus else {
            self.send(registry, notice, None);
            return;
        };
        if let Some(id) = subject(&notice) {
            if let Some(waiting) = self.judging.get_mut(id) {
                waiting.push_back(notice);
                return;
            }
        }
        match self.voiced.judge(notice) {
            Judgement::Send(notice) => self.send(registry, notice, None),
            Judgement::Drop => {}
            Judgement::Ask(notice) => {
                let Notice::Changed { id, to, .. } = &notice else {
                    return;
                };
                let (id, to) = (id.clone(), *to);
                self.judging.insert(id.clone(), VecDeque::new());
                let (chorus, answers) = (Arc::clone(chorus), self.answers.clone());
                tokio::spawn(async move {
                    let voice = chorus.changed(&id, to).await;
                    let _ = answers.send(Answer::Voice(notice, voice));
                });
            }
        }
    }

    /// What the chorus answered: the change sent or not, then what waited behind it.
    fn answered(&mut self, answer: Answer) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        match answer {
            Answer::Voice(notice, voice) => {
                let waiting = subject(&notice)
                    .and_then(|id| self.judging.remove(id))
                    .unwrap_or_default();
                if let Some((notice, fleet)) = self.voiced.voiced(notice, voice) {
                    self.send(&registry, notice, fleet);
                }
                for notice in waiting {
                    self.judge(&registry, notice);
                }
            }
            Answer::Recovered(recovered) => {
                self.recovering = false;
                for (notice, voice) in self.voiced.recovered(recovered) {
                    self.send(&registry, notice, Some(voice));
                }
            }
        }
    }

    /// Hands `notice` to the dispatcher, as a message; never waits. With the dispatcher a
    /// thousand behind (incident lookups all timing out), it goes to the sinks at once,
    /// without its link, and says so.
    fn send(&mut self, registry: &Registry, notice: Notice, fleet: Option<FleetVoice>) {
        self.sequence += 1;
        let mut message = message(registry, notice, &self.id_prefix, self.sequence);
        if let Some(dc) = fleet.as_ref().and_then(|f| f.datacenter.as_deref()) {
            message.text = message.notice.text_in(dc);
        }
        message.fleet = fleet;
        match self.outbox.try_send(message) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => {
                tracing::warn!(id = %message.id, "incident links are that far behind: a notice goes without its link");
                push(&self.queues, message);
            }
            Err(mpsc::error::TrySendError::Closed(message)) => push(&self.queues, message),
        }
    }
}

/// The dependency a notice is about, if one.
fn subject(notice: &Notice) -> Option<&DependencyId> {
    match notice {
        Notice::Changed { id, .. } | Notice::Resolved { id, .. } | Notice::Flapping { id } => {
            Some(id)
        }
        _ => None,
    }
}

/// The messages in order, each with its incident link looked up (many at once, each for
/// at most [`INCIDENT_PATIENCE`]), into every sink's queue; then the queues closed.
async fn dispatch(
    letters: mpsc::Receiver<Message>,
    incidents: Option<IncidentOf>,
    queues: Vec<Arc<Queue>>,
) {
    let letters = futures::stream::unfold(letters, |mut letters| async move {
        letters.recv().await.map(|m| (m, letters))
    });
    letters
        .map(|mut message| {
            let incidents = incidents.clone();
            async move {
                if let Some(incident_of) = incidents {
                    message.incident =
                        tokio::time::timeout(INCIDENT_PATIENCE, incident_of(&message.notice))
                            .await
                            .ok()
                            .flatten();
                }
                message
            }
        })
        .buffered(LOOKUPS)
        .for_each(|message| {
            push(&queues, message);
            std::future::ready(())
        })
        .await;
    for queue in &queues {
        queue.close();
    }
}

fn push(queues: &[Arc<Queue>], message: Message) {
    let message = Arc::new(message);
    for queue in queues {
        queue.push(Arc::clone(&message));
    }
}

fn message(registry: &Registry, notice: Notice, prefix: &str, sequence: u64) -> Message {
    Message {
        version: SCHEMA_VERSION,
        id: format!("{prefix}-{sequence}"),
        at: registry.clock().wall(),
        appname: registry.appname().to_owned(),
        hostname: registry.hostname().to_owned(),
        text: notice.text(),
        notice,
        incident: None,
        fleet: None,
    }
}
