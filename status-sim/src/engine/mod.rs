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

mod build;
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
