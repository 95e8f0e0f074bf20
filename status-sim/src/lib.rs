//! A seeded discrete-event simulator of request routing, to try health strategies on a model
//! of a fleet before production.
//!
//! It has the primitives of Kyle Kingsbury's Timelike (servers, delays, cables, queues, faulty
//! nodes, retries, balancers, pools), with the exact semantics documented on each builder
//! method of [`Sim`], and nodes that run status-traffic's real code: the node pool's cascade
//! ([`Sim::cascade`]), the shedding admission ([`Sim::shed`]) and self-culling within a
//! fleet-wide budget ([`Sim::cull`]). Those mechanisms are state machines told the time, the
//! outcomes and their random numbers; here the time is virtual.
//!
//! Unlike Timelike, which runs a JVM thread per request, it is single-threaded: time is whole
//! virtual milliseconds, events at the same time run in the order they were scheduled, and
//! every random number comes from streams derived from one seed. A seed gives one output,
//! byte for byte, and a 100,000-request scenario runs in a fraction of a second.
//!
//! [`scenario`] holds the routing study's scenarios and ours; the `status-sim` binary prints
//! them as a table or JSON lines and charts their latency distributions. [`topology`] reads a
//! topology written as text (`retry 3 > lb-min-conn hold=1000 250 x (…)`), so that
//! `status-sim run` can try a model of your own fleet.
//!
//! # Example
//!
//! ```
//! use status_sim::{summarize, Load, MinConn, Sim};
//!
//! // A least-connections balancer over 10 nodes that are each up about 95 % of the time.
//! let mut sim = Sim::new(7);
//! let nodes = sim.pool(10, |sim| {
//!     let server = sim.server();
//!     let work = sim.delay_exponential(100.0, server);
//!     let queue = sim.queue_exclusive(work);
//!     sim.faulty(20_000.0, 1_000.0, queue)
//! });
//! let root = sim.min_conn(MinConn::default(), &nodes);
//! let summary = summarize(&sim.run(root, &Load::poisson(2_000, 20.0)));
//! assert_eq!(summary.selected, 1_000);
//! assert!(summary.success < 1.0);
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

mod chart;
mod engine;
pub mod fleet;
mod node;
pub mod scenario;
mod stats;
pub mod topology;

pub use self::chart::{latency_chart, time_chart, Series, Span};
pub use self::engine::Sim;
pub use self::node::{
    Balance, BudgetId, CascadeSettings, CullSettings, MinConn, NodeCounts, NodeId, ShedSettings,
};
pub use self::stats::{quantile, select_middle_half, summarize, Latency, Summary};

/// Virtual time, in whole milliseconds.
pub type Ms = u64;

/// What happened to one request of a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// When it was issued (its first event).
    pub issued: Ms,
    /// When its last answer reached the client (its last event).
    pub answered: Ms,
    /// Whether that answer was not an error.
    pub ok: bool,
}

impl Record {
    /// From the first event to the last.
    #[must_use]
    pub fn latency(&self) -> Ms {
        self.answered - self.issued
    }
}

/// The gap between one request of a load and the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gap {
    /// Exponential of this mean, rounded to whole milliseconds (0 possible): a Poisson
    /// process.
    Exponential(f64),
    /// Exactly this many milliseconds (0: all at once, in order).
    Fixed(Ms),
}

/// Requests issued independently of their answers, in phases.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// `(requests, gap before each next one)`, one phase after the other. The first request
    /// is issued at once.
    pub phases: Vec<(u64, Gap)>,
}

impl Load {
    /// `n` requests with exponential gaps of mean `mean_gap` ms.
    #[must_use]
    pub fn poisson(n: u64, mean_gap: f64) -> Self {
        Self {
            phases: vec![(n, Gap::Exponential(mean_gap))],
        }
    }

    /// `n` requests exactly `gap` ms apart.
    #[must_use]
    pub fn every(n: u64, gap: Ms) -> Self {
        Self {
            phases: vec![(n, Gap::Fixed(gap))],
        }
    }

    /// Phases of `(requests, gap)`, one after the other: a burst is a phase with a short gap
    /// between two with long ones. The gap before a phase's first request is that phase's.
    #[must_use]
    pub fn phases(phases: impl IntoIterator<Item = (u64, Gap)>) -> Self {
        Self {
            phases: phases.into_iter().collect(),
        }
    }

    /// Requests in all.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.phases.iter().map(|&(n, _)| n).sum()
    }
}
