//! The nodes a topology is made of, and the settings of those that run status-traffic's code.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use status_core::Rng;
use status_traffic::cull::{CullPolicy, FailureWindow};
use status_traffic::limit::{Lease, LimitChoice, Limiter};
use status_traffic::pool::Selector;
use status_traffic::shed::WaitingRoom;

use crate::Ms;

/// A node of a topology, as [`Sim`](crate::Sim)'s builder methods return it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }
}

/// An exponential time of mean `mean`, rounded to whole milliseconds (0 possible).
pub(crate) fn exponential(rng: &mut Rng, mean: f64) -> Ms {
    let unit = 1.0 - rng.next_f64(); // (0, 1]
    let time = (-mean * unit.ln()).round();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // non-negative, rounded
    let ms = time as Ms;
    ms
}

/// How a balancer picks among its backends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Balance {
    /// Uniformly at random.
    Random,
    /// In turn, starting with the first.
    RoundRobin,
    /// The backend with the fewest outstanding requests.
    MinConn(MinConn),
    /// Power of two choices: the one of two random backends with fewer outstanding requests.
    PowerOfTwo,
}

/// Settings of a least-connections balancer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinConn {
    /// Break ties at random instead of to the lowest index.
    pub random_ties: bool,
    /// After an error answer, the backend's connection is released only this much later
    /// (0: at once), so that a backend failing fast stops attracting traffic.
    pub error_hold: Ms,
}

/// How the node pool chooses ([`Sim::cascade_with`](crate::Sim::cascade_with)): the
/// `status_traffic::pool::Pool` settings that matter to the choice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CascadeSettings {
    /// Draw every call from the weighted order (`PoolBuilder::spread`) instead of filling idle
    /// backends in the turning rank order first.
    pub spread: bool,
    /// How long a failed call holds its backend back, in ms (0: never).
    pub hold: Ms,
    /// The largest share of the backends held back at once.
    pub max_held: f64,
}

impl Default for CascadeSettings {
    /// The pool's defaults.
    fn default() -> Self {
        Self {
            spread: false,
            hold: u64::try_from(status_traffic::pool::DEFAULT_HOLD.as_millis()).unwrap_or(0),
            max_held: status_traffic::pool::DEFAULT_MAX_HELD,
        }
    }
}

/// Settings of the shedding admission ([`Sim::shed`](crate::Sim::shed)), as
/// `status_traffic::shed::ShedLayer` takes them.
#[derive(Debug, Clone)]
pub struct ShedSettings {
    /// The limit algorithm (a fresh limiter per node).
    pub limit: LimitChoice,
    /// Requests that may wait beyond the limit.
    pub queue: usize,
    /// How long one may wait (from its arrival).
    pub queue_timeout: Ms,
    /// How long one may take in all (from its arrival).
    pub deadline: Ms,
    /// Newest first once the oldest has waited this long.
    pub lifo_after: Option<Ms>,
}

impl Default for ShedSettings {
    /// The layer's defaults: Gradient2, 64 waiting, 1 s queue timeout, 2 s deadline, LIFO
    /// after 250 ms.
    fn default() -> Self {
        Self {
            limit: LimitChoice::Gradient2,
            queue: 64,
            queue_timeout: 1000,
            deadline: 2000,
            lifo_after: Some(250),
        }
    }
}

/// Settings of a self-culling node ([`Sim::cull`](crate::Sim::cull)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CullSettings {
    /// Failures in the window at which the node counts as broken.
    pub threshold: u64,
    /// The failure window (whole seconds).
    pub window: Ms,
    /// How often the culler looks (±20 % jitter, as the production driver).
    pub interval: Ms,
    /// How long a node must have run before it may cull itself.
    pub min_uptime: Ms,
    /// How long after a cull a fresh node takes its place.
    pub restart: Ms,
}

impl Default for CullSettings {
    /// Scaled to the study's timescale: 10 failures in 5 s, a look every 500 ms, a restart
    /// after 2 s, no minimum uptime.
    fn default() -> Self {
        Self {
            threshold: 10,
            window: 5000,
            interval: 500,
            min_uptime: 0,
            restart: 2000,
        }
    }
}

/// A fleet-wide budget of culls, shared by the cull nodes given it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BudgetId(pub(crate) usize);

/// What a node counted, for tests and reports. Each field applies to the nodes its doc names;
/// the others leave it at 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeCounts {
    /// Requests that arrived (every node).
    pub arrived: u64,
    /// Error answers the node gave itself: down (faulty), no backend in rotation (balancers),
    /// no capacity (cascade).
    pub refused: u64,
    /// Requests refused at once because the waiting room was full (shed).
    pub queue_full: u64,
    /// Waiters answered an error at their queue timeout, never processed (shed).
    pub queue_timeout: u64,
    /// Requests cut off by their total deadline (shed).
    pub deadline: u64,
    /// Times the node culled itself (cull).
    pub culled: u64,
    /// Times the budget refused it a token (cull).
    pub denied: u64,
    /// Second copies sent (hedge).
    pub hedged: u64,
}

#[derive(Debug)]
pub(crate) struct Faulty {
    pub(crate) mtbf: f64,
    pub(crate) mttr: f64,
    pub(crate) up: bool,
    pub(crate) flip_at: Ms,
    pub(crate) rng: Rng,
    pub(crate) next: NodeId,
}

impl Faulty {
    /// A fresh node at `now`: up, its next flip at `now + Exp(mtbf)`.
    pub(crate) fn start(&mut self, now: Ms) {
        self.up = true;
        self.flip_at = now + exponential(&mut self.rng, self.mtbf);
    }

    /// Whether it is up when a request arrives at `now`, flipping once if its time came.
    pub(crate) fn look(&mut self, now: Ms) -> bool {
        if now >= self.flip_at {
            self.up = !self.up;
            let mean = if self.up { self.mtbf } else { self.mttr };
            self.flip_at = now + exponential(&mut self.rng, mean);
        }
        self.up
    }
}

#[derive(Debug)]
pub(crate) struct Balancer {
    pub(crate) how: Balance,
    pub(crate) backends: Vec<NodeId>,
    pub(crate) outstanding: Vec<u32>,
    pub(crate) next: usize,
    pub(crate) rng: Rng,
}

impl Balancer {
    /// The backend a request goes to, among those `in_rotation`; `None` if none is.
    pub(crate) fn pick(&mut self, in_rotation: &[bool], all_in: bool) -> Option<usize> {
        let n = self.backends.len();
        if n == 0 {
            return None;
        }
        let ok = |i: usize| all_in || in_rotation[self.backends[i].index()];
        match self.how {
            Balance::Random => {
                if all_in {
                    return Some(self.rng.below(n as u64) as usize);
                }
                let eligible: Vec<usize> = (0..n).filter(|&i| ok(i)).collect();
                (!eligible.is_empty())
                    .then(|| eligible[self.rng.below(eligible.len() as u64) as usize])
            }
            Balance::RoundRobin => (0..n)
                .map(|k| (self.next + k) % n)
                .find(|&i| ok(i))
                .inspect(|&i| self.next = i + 1),
            Balance::MinConn(MinConn { random_ties, .. }) => {
                let mut best: Option<usize> = None;
                let mut ties = 0u64;
                for i in 0..n {
                    if !ok(i) {
                        continue;
                    }
                    match best {
                        Some(b) if self.outstanding[i] > self.outstanding[b] => {}
                        Some(b) if self.outstanding[i] == self.outstanding[b] => {
                            if random_ties {
                                ties += 1;
                                if self.rng.below(ties) == 0 {
                                    best = Some(i);
                                }
                            }
                        }
                        _ => {
                            best = Some(i);
                            ties = 1;
                        }
                    }
                }
                best
            }
            Balance::PowerOfTwo => {
                let eligible: Vec<usize> = if all_in {
                    Vec::new()
                } else {
                    (0..n).filter(|&i| ok(i)).collect()
                };
                let m = if all_in { n } else { eligible.len() };
                let at = |k: usize| if all_in { k } else { eligible[k] };
                match m {
                    0 => None,
                    1 => Some(at(0)),
                    _ => {
                        let a = self.rng.below(m as u64) as usize;
                        let mut b = self.rng.below(m as u64 - 1) as usize;
                        if b >= a {
                            b += 1;
                        }
                        let (a, b) = (at(a), at(b));
                        Some(if self.outstanding[b] < self.outstanding[a] {
                            b
                        } else {
                            a
                        })
                    }
                }
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct Cascade {
    pub(crate) backends: Vec<NodeId>,
    pub(crate) selector: Selector<u32>,
    pub(crate) limiters: Vec<Limiter>,
    pub(crate) leases: HashMap<u32, Lease>,
    pub(crate) rng: Rng,
}

#[derive(Debug)]
pub(crate) enum ShedEntry {
    Waiting { arrived: Ms },
    Running { lease: Lease, child: u32 },
}

#[derive(Debug)]
pub(crate) struct Shed {
    pub(crate) settings: ShedSettings,
    pub(crate) limiter: Limiter,
    pub(crate) room: WaitingRoom<u32>,
    pub(crate) entries: HashMap<u32, ShedEntry>,
    pub(crate) next: NodeId,
}

#[derive(Debug)]
pub(crate) struct Cull {
    pub(crate) settings: CullSettings,
    pub(crate) policy: CullPolicy,
    pub(crate) window: FailureWindow,
    pub(crate) budget: BudgetId,
    pub(crate) started: Ms,
    pub(crate) rng: Rng,
    pub(crate) next: NodeId,
}

impl Cull {
    pub(crate) fn new(settings: CullSettings, budget: BudgetId, rng: Rng, next: NodeId) -> Self {
        Self {
            settings,
            policy: CullPolicy {
                threshold: settings.threshold,
                min_uptime: Duration::from_millis(settings.min_uptime),
            },
            window: FailureWindow::new(Duration::from_millis(settings.window)),
            budget,
            started: 0,
            rng,
            next,
        }
    }
}

#[derive(Debug)]
pub(crate) enum Node {
    Server,
    DelayFixed {
        dt: Ms,
        next: NodeId,
    },
    DelayExponential {
        mean: f64,
        rng: Rng,
        next: NodeId,
    },
    Cable {
        dt: Ms,
        next: NodeId,
    },
    Queue {
        n: usize,
        busy: usize,
        waiting: VecDeque<u32>,
        next: NodeId,
    },
    Faulty(Faulty),
    Retry {
        n: u32,
        next: NodeId,
    },
    Balancer(Balancer),
    Cascade(Box<Cascade>),
    Hedge(Box<HedgeNode>),
    Shed(Box<Shed>),
    Cull(Box<Cull>),
}

/// status-traffic's hedging policy in front of `next`: each request goes down as a child
/// copy; past the policy's delay, a second copy, if the budget allows; the first answer goes
/// up and the other copy is cancelled.
#[derive(Debug)]
pub(crate) struct HedgeNode {
    pub(crate) hedger: status_traffic::hedge::Hedger,
    pub(crate) next: NodeId,
    /// The requests under way: their copies and when they arrived.
    pub(crate) entries: HashMap<u32, HedgeEntry>,
}

#[derive(Debug)]
pub(crate) struct HedgeEntry {
    pub(crate) copies: Vec<u32>,
    pub(crate) arrived: Ms,
}
