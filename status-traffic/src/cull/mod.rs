//! Self-culling within a fleet-wide budget (ClassDojo's leaky bucket): an instance whose
//! live traffic fails too much takes a token from a shared budget before it reports itself
//! down, so that a fleet-wide problem can never make every instance restart at once.
//!
//! - [`Culler`]: every interval (jittered from the registry's seed), the policy's decision
//!   on the failures counted by [`count`](crate::count); over the threshold, a token from the
//!   budget, then the `Cull` rotation hold (readiness, summary and liveness answer 503;
//!   requests in flight finish). Never while the instance is already out of rotation, never
//!   before a minimum uptime. It reports as a passive dependency.
//! - [`FailureWindow`]: failures over a sliding window, one slot a second (the counter's,
//!   [`count::FailureWindow`](crate::count::FailureWindow), named here too).
//! - [`CullPolicy`]: the pure decision, told the window's count, the uptime and whether the
//!   instance is already leaving.
//! - Budgets behind one trait, [`Budget`]: [`InProcessBudget`], and with the `redis` feature
//!   `RedisBudget`, fixed or sliding window, each ask one atomic script; with the `etcd`
//!   feature `EtcdBudget`, each grant one linearizable transaction. A budget that cannot be
//!   asked refuses: never cull without coordination.

mod budget;
mod culler;
#[cfg(feature = "etcd")]
mod etcd;
mod policy;
#[cfg(feature = "redis")]
mod redis;

pub use self::budget::{
    Asking, Budget, BudgetError, BudgetWindow, Grant, GrantWindow, InProcessBudget, Vouching,
};
pub use self::culler::{Culler, CullerHandle, CullerState};
#[cfg(feature = "etcd")]
pub use self::etcd::EtcdBudget;
pub use self::policy::{next_look, CullPolicy, Decision, Look};
#[cfg(feature = "redis")]
pub use self::redis::RedisBudget;
// The window is the counter's (the culler reads it; the counter knows nothing of culling).
pub use crate::count::FailureWindow;
