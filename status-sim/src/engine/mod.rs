//! The simulation: a virtual clock in whole milliseconds, an event queue whose ties go by
//! insertion order, the nodes, and the requests in flight.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use status_core::Rng;
use status_traffic::cull::GrantWindow;
use status_traffic::limit::LimitChoice;
use status_traffic::pool::Selector;
use status_traffic::shed::WaitingRoom;

use crate::node::{
    exponential, Balance, Balancer, BudgetId, Cascade, CascadeSettings, Cull, CullSettings, Faulty,
    MinConn, Node, NodeCounts, NodeId, Shed, ShedSettings,
};

mod flow;
mod mechanisms;

use self::mechanisms::look_after;
use crate::{Gap, Load, Ms, Record};

/// One place on a request's way down: the node that wants to see the answer on its way back,
/// and what it remembers (a backend's index, an attempt count, the request a child serves).
#[derive(Debug, Clone, Copy)]
struct Frame {
    node: NodeId,
    slot: u32,
}

#[derive(Debug)]
struct Request {
    stack: Vec<Frame>,
    /// The load's request this is (its record), or `None` for a shed node's child.
    record: Option<u32>,
    /// Cut off by a shed node's deadline: its work was dropped, its events are ignored.
    cancelled: bool,
}

#[derive(Debug, Clone, Copy)]
enum Event {
    Issue,
    Arrive(u32, NodeId),
    Return(u32, bool),
    Timer(NodeId, Timer),
}

#[derive(Debug, Clone, Copy)]
enum Timer {
    /// A min-conn balancer's held connection to this backend ends.
    Release(u32),
    /// A shed node's waiter reaches its queue timeout (or deadline, if sooner): the room
    /// expires whoever has run out.
    Expiry,
    /// A shed node's running request reaches its deadline.
    Deadline(u32),
    /// A cull node's culler looks.
    Look,
    /// A hedge node's request reaches its delay unanswered: a second copy, if the budget
    /// allows.
    Hedge(u32),
    /// A culled node's replacement is up.
    Restart,
}

/// A simulation: build a topology with its methods (each returns the new node's id, built
/// bottom-up from the node it passes requests to), then [`run`](Self::run) a load against a
/// root.
///
/// Single-threaded and exact: time is whole virtual milliseconds, events at the same time run
/// in the order they were scheduled, and every random number comes from streams derived from
/// the seed (one per node, one for the load), so a seed gives one result.
///
/// # Example
///
/// ```
/// use status_sim::{Load, Sim};
///
/// // Two single-threaded servers behind a round-robin balancer, 20 ms of work each.
/// let mut sim = Sim::new(1);
/// let servers: Vec<_> = (0..2)
///     .map(|_| {
///         let server = sim.server();
///         let work = sim.delay_fixed(20, server);
///         sim.queue_exclusive(work)
///     })
///     .collect();
/// let root = sim.round_robin(&servers);
/// let records = sim.run(root, &Load::poisson(1000, 15.0));
/// assert!(records.iter().all(|r| r.ok && r.latency() >= 20));
/// ```
#[derive(Debug)]
pub struct Sim {
    seed: Rng,
    now: Ms,
    seq: u64,
    heap: BinaryHeap<Reverse<(Ms, u64, usize)>>,
    events: Vec<Option<Event>>,
    free: Vec<usize>,
    nodes: Vec<Node>,
    counts: Vec<NodeCounts>,
    in_rotation: Vec<bool>,
    /// Nodes out of rotation now (balancers skip them; while none is, they need not look).
    out_of_rotation: usize,
    budgets: Vec<GrantWindow>,
    requests: Vec<Request>,
    records: Vec<Record>,
    answered: usize,
    load: Option<LoadState>,
}

#[derive(Debug)]
struct LoadState {
    root: NodeId,
    phases: Vec<(u64, Gap)>,
    phase: usize,
    issued: u64,
    rng: Rng,
}

impl LoadState {
    /// Moves past the phases whose requests are all issued.
    fn advance(&mut self) {
        while self
            .phases
            .get(self.phase)
            .is_some_and(|&(n, _)| self.issued >= n)
        {
            self.phase += 1;
            self.issued = 0;
        }
    }
}

impl Sim {
    /// An empty simulation whose random streams derive from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self {
            seed: Rng::new(seed),
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            events: Vec::new(),
            free: Vec::new(),
            nodes: Vec::new(),
            counts: Vec::new(),
            in_rotation: Vec::new(),
            out_of_rotation: 0,
            budgets: Vec::new(),
            requests: Vec::new(),
            records: Vec::new(),
            answered: 0,
            load: None,
        }
    }

    /// The time now, in virtual milliseconds.
    #[must_use]
    pub fn now(&self) -> Ms {
        self.now
    }

    /// What a node counted.
    #[must_use]
    pub fn counts(&self, node: NodeId) -> NodeCounts {
        self.counts[node.index()]
    }

    /// Whether a node is in rotation (only a cull node ever leaves it).
    #[must_use]
    pub fn in_rotation(&self, node: NodeId) -> bool {
        self.in_rotation[node.index()]
    }

    fn rng(&self, node: usize) -> Rng {
        self.seed.derive(&format!("node {node}"))
    }

    fn add(&mut self, node: Node) -> NodeId {
        let id = NodeId(u32::try_from(self.nodes.len()).expect("fewer than 2^32 nodes"));
        self.nodes.push(node);
        self.counts.push(NodeCounts::default());
        self.in_rotation.push(true);
        id
    }

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

    fn schedule(&mut self, at: Ms, event: Event) {
        let slot = if let Some(slot) = self.free.pop() {
            self.events[slot] = Some(event);
            slot
        } else {
            self.events.push(Some(event));
            self.events.len() - 1
        };
        self.heap.push(Reverse((at, self.seq, slot)));
        self.seq += 1;
    }

    /// Issues `load` against `root` and runs until every request is answered; each
    /// request's record, in the order they were issued.
    ///
    /// Run again, the simulation goes on from where the last run stopped: the clock, the
    /// nodes' state (queues, failures, limits, culls) and any work still below a deadline
    /// that cut it off carry over, and the new load starts at once.
    ///
    /// # Panics
    ///
    /// If the topology leaves a request unanswered forever (a cycle, say).
    pub fn run(&mut self, root: NodeId, load: &Load) -> Vec<Record> {
        let total = load.total();
        self.records.clear();
        // Requests of an earlier run keep their ids: a cancelled one may still have events
        // pending, which must find it (and skip it), not a new request.
        self.answered = 0;
        self.load = Some(LoadState {
            root,
            phases: load.phases.clone(),
            phase: 0,
            issued: 0,
            rng: self.seed.derive("load"),
        });
        if total > 0 {
            self.schedule(self.now, Event::Issue);
        }
        while (self.answered as u64) < total {
            let Reverse((at, _, slot)) = self
                .heap
                .pop()
                .expect("the topology left requests unanswered");
            let event = self.events[slot].take().expect("a scheduled event");
            self.free.push(slot);
            self.now = at;
            match event {
                Event::Issue => self.issue(),
                Event::Arrive(req, node) => self.arrive(req, node),
                Event::Return(req, ok) => self.answer(req, ok),
                Event::Timer(node, timer) => self.timer(node, timer),
            }
        }
        std::mem::take(&mut self.records)
    }

    fn issue(&mut self) {
        let load = self.load.as_mut().expect("a load");
        load.advance();
        load.issued += 1;
        let root = load.root;
        load.advance();
        // The gap before the next request is drawn with the mean of that request's phase.
        if let Some(&(_, gap)) = load.phases.get(load.phase) {
            let gap = match gap {
                Gap::Exponential(mean) => exponential(&mut load.rng, mean),
                Gap::Fixed(gap) => gap,
            };
            self.schedule(self.now + gap, Event::Issue);
        }
        let record = u32::try_from(self.records.len()).expect("fewer than 2^32 requests");
        self.records.push(Record {
            issued: self.now,
            answered: self.now,
            ok: false,
        });
        let req = self.new_request(Vec::new(), Some(record));
        self.arrive(req, root);
    }

    fn new_request(&mut self, stack: Vec<Frame>, record: Option<u32>) -> u32 {
        self.requests.push(Request {
            stack,
            record,
            cancelled: false,
        });
        u32::try_from(self.requests.len() - 1).expect("fewer than 2^32 requests")
    }

    fn push(&mut self, req: u32, node: NodeId, slot: u32) {
        self.requests[req as usize].stack.push(Frame { node, slot });
    }
}
