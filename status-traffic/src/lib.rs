//! Mechanisms that act on live traffic, reporting into a `status` registry.
//!
//! Every algorithm here is a plain state machine that is *told* the time and the outcomes: it
//! never reads a clock, never sleeps, never draws randomness it was not handed. The tower
//! layers that drive them in production and the simulator that drives them in virtual time
//! run the same code.
//!
//! | module | what |
//! |---|---|
//! | [`limit`] | concurrency-limit algorithms (`Fixed`, `Aimd`, `Gradient2`, `Vegas`) and the [`Limiter`](limit::Limiter) that hands out leases |
//! | [`shed`] | a tower layer: admission by a limiter, a bounded priority queue, queue-wait and total deadlines |
//! | [`count`] | a tower layer counting failures of live traffic over a sliding window |
//! | [`cull`] | self-culling within a fleet-wide budget: policy, budgets (in process, Redis), the culler |
//! | [`pool`] | a node pool: idle nodes filled in a turning order, failed nodes held back, a success-weighted cascade over the nodes' limiters |
//! | [`hedge`] | a tower layer: a second copy of a slow call after a delay, within a budget |
//! | [`overload`] | the mark every refusal carries, so that overload is never counted as failure |
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use status_traffic::limit::{Aimd, Limiter};
//!
//! let limiter = Limiter::new(Aimd::default());
//! let start = Duration::ZERO;
//! let lease = limiter.try_acquire(start).expect("under the limit");
//! // ... the work ...
//! lease.success(start + Duration::from_millis(30));
//! assert_eq!(limiter.in_flight(), 0);
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod count;
pub mod cull;
pub mod hedge;
pub mod limit;
pub mod overload;
pub mod pool;
mod report;
pub mod shed;
mod sync;
