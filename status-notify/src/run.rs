//! The driver: a registry's events into the [`Notifier`], its notices into every sink's
//! bounded queue, and one worker per sink delivering with retries. Delivery never delays a
//! check, a probe or the bus: the registry's events arrive on a broadcast channel this task
//! reads at its own pace, and a sink that hangs or fails costs only its own retries.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Chorus, IncidentLink, Notice, NoticePolicy, Notifier, Sink, Told};
use crate::drive::{drive, Driver};
use crate::queue::{deliver, IncidentOf, OnTold, Queue, RecallTold, Settings, SinkStats};
use status_core::{Error, Registry};

/// Starts [`Notifications`]; see [`Notifications::builder`].
#[must_use = "a builder does nothing until `start` is called"]
pub struct NotificationsBuilder {
    registry: Registry,
    policy: NoticePolicy,
    sinks: Vec<Arc<dyn Sink>>,
    queue: usize,
    attempt_timeout: Duration,
    max_age: Duration,
    retry_after: Duration,
    tick: Duration,
    remember: Option<(RecallTold, OnTold)>,
    incidents: Option<IncidentOf>,
    chorus: Option<Arc<dyn Chorus>>,
    feeds: Vec<Feed>,
}

/// A task started with the notifier that tells it notices from elsewhere (an objective's
/// alarms): handed where to tell them and the registry; it ends when the notifier does.
pub(crate) type Feed = Box<
    dyn FnOnce(
            tokio::sync::mpsc::Sender<Notice>,
            status_core::WeakRegistry,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        + Send,
>;

impl std::fmt::Debug for NotificationsBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NotificationsBuilder")
            .field("policy", &self.policy)
            .field("sinks", &self.sinks.len())
            .finish_non_exhaustive()
    }
}

impl NotificationsBuilder {
    /// The policy: the hold time and the digest threshold.
    pub fn policy(mut self, policy: NoticePolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Delivers to `sink` too.
    pub fn sink(mut self, sink: impl Sink) -> Self {
        self.sinks.push(Arc::new(sink));
        self
    }

    /// How many messages wait for a sink at most; past it, the oldest is dropped (counted).
    /// Default: 256.
    pub fn queue(mut self, capacity: usize) -> Self {
        self.queue = capacity.max(1);
        self
    }

    /// How long one delivery attempt may take. Default: 5 s.
    pub fn attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// How long a message is retried before it is dropped (counted). Default: 10 min.
    pub fn max_age(mut self, age: Duration) -> Self {
        self.max_age = age;
        self
    }

    /// The first retry's wait, doubling up to sixty times it, each with a jitter of ±50 %.
    /// Default: 1 s.
    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = wait;
        self
    }

    /// Starts from what `recall` answers, what was told before a restart (kept by the
    /// application; waited for at most 10 s before the first notice, then started without),
    /// and calls `on_told` with what was told each time it changes (to keep it): a
    /// restarted notifier then neither repeats a notice already told nor loses the
    /// "resolved" of an outage told before. What is told between a change and its keeping
    /// (a second with `status-history`) may be told again after a crash.
    pub fn remember(
        mut self,
        recall: impl std::future::Future<Output = Option<Told>> + Send + 'static,
        on_told: impl Fn(&Told) + Send + Sync + 'static,
    ) -> Self {
        self.remember = Some((Box::pin(recall), Arc::new(on_told)));
        self
    }

    /// Asks `incident_of` which incident each notice belongs to (an incident store, such as
    /// `status_history::History::incident_link`), and says it in the message's `incident`
    /// (and Slack's text). A lookup that takes over 3 s, or finds none, sends the message
    /// without one.
    pub fn incidents<F>(
        mut self,
        incident_of: impl Fn(&Notice) -> F + Send + Sync + 'static,
    ) -> Self
    where
        F: std::future::Future<Output = Option<IncidentLink>> + Send + 'static,
    {
        self.incidents = Some(Arc::new(move |notice| Box::pin(incident_of(notice))));
        self
    }

    /// Asks `chorus` who tells each dependency's change: with a fleet (status-fleet's
    /// `FleetChorus`), one instance tells a failure the data center shares, for all, with
    /// the fleet's figures in the message's `fleet`; the others stay silent about it and its
    /// recovery, which the speaker tells when the fleet recovers. Their own failures they
    /// still tell.
    pub fn chorus(mut self, chorus: impl Chorus) -> Self {
        self.chorus = Some(Arc::new(chorus));
        self
    }

    /// Starts `feed` with the notifier: a task telling it notices from elsewhere.
    #[cfg_attr(not(feature = "history"), allow(dead_code))]
    pub(crate) fn feed(mut self, feed: Feed) -> Self {
        self.feeds.push(feed);
        self
    }

    /// How often the policy is asked what is due. Default: 1 s.
    pub fn tick(mut self, every: Duration) -> Self {
        self.tick = every.max(Duration::from_millis(10));
        self
    }

    /// Starts the driver and one worker per sink. They end with the registry.
    ///
    /// # Errors
    ///
    /// [`Error::is_no_runtime`] outside a Tokio runtime.
    pub fn start(self) -> Result<Notifications, Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::no_runtime())?;
        let settings = Settings {
            attempt_timeout: self.attempt_timeout,
            max_age: self.max_age,
            retry_after: self.retry_after,
        };
        let queues: Vec<Arc<Queue>> = self
            .sinks
            .iter()
            .map(|sink| Arc::new(Queue::new(sink.name().to_owned(), self.queue)))
            .collect();
        for (sink, queue) in self.sinks.into_iter().zip(&queues) {
            let rng = self.registry.rng(&format!("notify-{}", queue.name));
            runtime.spawn(deliver(sink, Arc::clone(queue), settings, rng));
        }
        let notifier = Notifier::new(self.policy);
        let (recall, on_told) = match self.remember {
            Some((recall, on_told)) => (Some(recall), Some(on_told)),
            None => (None, None),
        };
        let id_prefix = format!("{:016x}", self.registry.rng("notify-ids").next_u64());
        let (tell, told) = tokio::sync::mpsc::channel(TOLD_QUEUE);
        for feed in self.feeds {
            runtime.spawn(feed(tell.clone(), self.registry.downgrade()));
        }
        runtime.spawn(drive(
            Driver {
                registry: self.registry.downgrade(),
                notifier,
                recall,
                on_told,
                queues: queues.clone(),
                tick: self.tick,
                id_prefix,
                incidents: self.incidents,
                chorus: self.chorus,
            },
            self.registry.observe(),
            told,
        ));
        Ok(Notifications {
            queues,
            tell,
            untold: Arc::new(AtomicU64::new(0)),
        })
    }
}

/// How many notices told from outside ([`Notifications::tell`]) wait for the driver at most.
const TOLD_QUEUE: usize = 1024;

/// Notifications running for a registry: each sink's counts. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Notifications {
    queues: Vec<Arc<Queue>>,
    tell: tokio::sync::mpsc::Sender<Notice>,
    /// Told notices dropped: the driver was that far behind, or gone.
    untold: Arc<AtomicU64>,
}

impl Notifications {
    /// Notifications for `registry`: the default policy, no sink yet.
    pub fn builder(registry: &Registry) -> NotificationsBuilder {
        NotificationsBuilder {
            registry: registry.clone(),
            policy: NoticePolicy::default(),
            sinks: Vec::new(),
            queue: 256,
            attempt_timeout: Duration::from_secs(5),
            max_age: Duration::from_secs(600),
            retry_after: Duration::from_secs(1),
            tick: Duration::from_secs(1),
            remember: None,
            incidents: None,
            chorus: None,
            feeds: Vec::new(),
        }
    }

    /// Each sink's counts, in the order added.
    #[must_use]
    pub fn stats(&self) -> Vec<SinkStats> {
        self.queues.iter().map(|q| q.stats()).collect()
    }

    /// Tells `notice` to every sink at the next tick, through the policy's digest like any
    /// other: an operator's action from an audit trail, say. Never waits: when the driver is
    /// over a thousand behind, the notice is dropped and counted ([`untold`](Self::untold)).
    pub fn tell(&self, notice: Notice) {
        if self.tell.try_send(notice).is_err() {
            self.untold.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("notification dropped: the notifier is behind");
        }
    }

    /// How many notices [`tell`](Self::tell) dropped.
    #[must_use]
    pub fn untold(&self) -> u64 {
        self.untold.load(Ordering::Relaxed)
    }
}
