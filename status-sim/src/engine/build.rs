//! The primitives, built bottom-up: each method adds a node and answers its id.

// The simulator's nodes and events, as engine/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

impl Sim {
    /// Answers at once, successfully.
    pub fn server(&mut self) -> NodeId {
        self.add(Node::Server)
    }

    /// Waits `dt`, then passes the request on (one way).
    pub fn delay_fixed(&mut self, dt: Ms, next: NodeId) -> NodeId {
        self.add(Node::DelayFixed { dt, next })
    }

    /// Waits an exponential time of mean `mean` rounded to whole milliseconds (0 possible),
    /// then passes the request on.
    pub fn delay_exponential(&mut self, mean: f64, next: NodeId) -> NodeId {
        let rng = self.rng(self.nodes.len());
        self.add(Node::DelayExponential { mean, rng, next })
    }

    /// Waits `dt`, passes the request on, and waits `dt` again on the way back.
    pub fn cable(&mut self, dt: Ms, next: NodeId) -> NodeId {
        self.add(Node::Cable { dt, next })
    }

    /// An unbounded first-come-first-served queue in front of one request at a time.
    pub fn queue_exclusive(&mut self, next: NodeId) -> NodeId {
        self.queue_fixed_concurrency(1, next)
    }

    /// An unbounded first-come-first-served queue in front of at most `n` requests at a time.
    pub fn queue_fixed_concurrency(&mut self, n: usize, next: NodeId) -> NodeId {
        self.add(Node::Queue {
            n: n.max(1),
            busy: 0,
            waiting: VecDeque::new(),
            next,
        })
    }

    /// Up, then down, then up…: starts up with its next flip at Exp(`mtbf`). Its state is
    /// looked at only when a request arrives: if the flip time has come, it flips once and
    /// draws the next flip time from now (Exp(`mttr`) going down, Exp(`mtbf`) coming up).
    /// While down it answers an error at once without passing the request on.
    pub fn faulty(&mut self, mtbf: f64, mttr: f64, next: NodeId) -> NodeId {
        let mut faulty = Faulty {
            mtbf,
            mttr,
            up: true,
            flip_at: 0,
            rng: self.rng(self.nodes.len()),
            next,
        };
        faulty.start(0);
        self.add(Node::Faulty(faulty))
    }

    /// At most `n` attempts in total, one after the other at once, until one is not an error.
    pub fn retry(&mut self, n: u32, next: NodeId) -> NodeId {
        self.add(Node::Retry { n: n.max(1), next })
    }

    /// `n` independent copies of the node `make` builds.
    pub fn pool(&mut self, n: usize, mut make: impl FnMut(&mut Self) -> NodeId) -> Vec<NodeId> {
        (0..n).map(|_| make(self)).collect()
    }

    /// A balancer over `backends` (several balancers may share backends; each keeps its own
    /// counts of outstanding requests).
    pub fn balancer(&mut self, how: Balance, backends: &[NodeId]) -> NodeId {
        let rng = self.rng(self.nodes.len());
        self.add(Node::Balancer(Balancer {
            how,
            backends: backends.to_vec(),
            outstanding: vec![0; backends.len()],
            next: 0,
            rng,
        }))
    }

    /// Uniformly at random over `backends`.
    pub fn random(&mut self, backends: &[NodeId]) -> NodeId {
        self.balancer(Balance::Random, backends)
    }

    /// In turn over `backends`.
    pub fn round_robin(&mut self, backends: &[NodeId]) -> NodeId {
        self.balancer(Balance::RoundRobin, backends)
    }

    /// Fewest outstanding requests over `backends`.
    pub fn min_conn(&mut self, settings: MinConn, backends: &[NodeId]) -> NodeId {
        self.balancer(Balance::MinConn(settings), backends)
    }

    /// status-traffic's node pool over `backends`: each request goes down the cascade, in a
    /// success-weighted random order (`Selector::cascade`), to the first backend whose limiter
    /// (of algorithm `limit`, one per backend) grants a lease; none → an error at once. An error
    /// answer counts against the backend as an ignore, as the `Pool` service's default does.
    pub fn cascade(&mut self, limit: LimitChoice, backends: &[NodeId]) -> NodeId {
        self.cascade_with(limit, CascadeSettings::default(), backends)
    }

    /// [`cascade`](Self::cascade) with the pool's choice set by `settings` (the weighted
    /// order alone, another hold).
    pub fn cascade_with(
        &mut self,
        limit: LimitChoice,
        settings: CascadeSettings,
        backends: &[NodeId],
    ) -> NodeId {
        let mut selector =
            Selector::new().hold(Duration::from_millis(settings.hold), settings.max_held);
        if settings.spread {
            selector = selector.spread();
        }
        for i in 0..backends.len() {
            selector.add(u32::try_from(i).expect("fewer than 2^32 backends"));
        }
        let rng = self.rng(self.nodes.len());
        self.add(Node::Cascade(Box::new(Cascade {
            backends: backends.to_vec(),
            selector,
            limiters: backends.iter().map(|_| limit.limiter()).collect(),
            leases: HashMap::new(),
            rng,
        })))
    }

    /// Second copies sent by every hedge node so far.
    #[must_use]
    pub fn hedged(&self) -> u64 {
        self.counts.iter().map(|c| c.hedged).sum()
    }

    /// status-traffic's hedging policy (`status_traffic::hedge::Hedger`) in front of `next`:
    /// a request still unanswered after the policy's delay gets a second copy sent to `next`
    /// if the budget allows; the first answer wins and the other copy is cancelled (each node
    /// below gives back what it held for it, as dropping the layer's future does).
    pub fn hedge(
        &mut self,
        settings: status_traffic::hedge::HedgeSettings,
        next: NodeId,
    ) -> NodeId {
        self.add(Node::Hedge(Box::new(crate::node::HedgeNode {
            hedger: status_traffic::hedge::Hedger::new(settings),
            next,
            entries: HashMap::new(),
        })))
    }

    /// status-traffic's shedding admission in front of `next`: a limiter, a bounded
    /// [`WaitingRoom`] with adaptive LIFO, a queue timeout checked when a waiter is picked up,
    /// and a total deadline (both from arrival). A request cut off by its deadline is answered
    /// an error at once, its lease ends as a drop, and its work downstream is dropped, as the
    /// layer drops the inner service's future: every node below gives back what it held for
    /// it (a queue's slot goes to the next in line).
    pub fn shed(&mut self, settings: ShedSettings, next: NodeId) -> NodeId {
        let limiter = settings.limit.limiter();
        let room = WaitingRoom::new(
            settings.queue,
            settings.lifo_after.map(Duration::from_millis),
        );
        self.add(Node::Shed(Box::new(Shed {
            settings,
            limiter,
            room,
            entries: HashMap::new(),
            next,
        })))
    }

    /// A fleet-wide budget of `capacity` culls per `window` (status-traffic's `GrantWindow`,
    /// the in-process budget's state), to share among cull nodes.
    pub fn budget(&mut self, capacity: u64, window: Ms) -> BudgetId {
        self.budgets
            .push(GrantWindow::new(capacity, Duration::from_millis(window)));
        BudgetId(self.budgets.len() - 1)
    }

    /// A node that culls itself: it counts the error answers of `next` in a
    /// `FailureWindow`; every interval `CullPolicy` decides, and over the threshold it asks
    /// `budget` for a token. With one, the node leaves rotation (balancers skip it; requests
    /// in flight finish) and a fresh one, without history, takes its place after the restart
    /// time.
    pub fn cull(&mut self, settings: CullSettings, budget: BudgetId, next: NodeId) -> NodeId {
        let mut rng = self.rng(self.nodes.len());
        let first = look_after(&mut rng, settings.interval);
        let id = self.add(Node::Cull(Box::new(Cull::new(settings, budget, rng, next))));
        self.schedule(first, Event::Timer(id, Timer::Look));
        id
    }
}
