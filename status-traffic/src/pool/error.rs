//! Why a pool refused or cut off a call.

use std::fmt;

/// No node had capacity (every limiter was at its limit, or the pool has no nodes): answer
/// 503 at once instead of queueing. A refusal of overload ([`is_overload`](crate::overload::is_overload)):
/// never counted as a failure of live traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCapacity;

impl fmt::Display for NoCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overloaded: no node of the pool has capacity")
    }
}

impl std::error::Error for NoCapacity {}

/// The node did not answer within the pool's [`timeout`](super::PoolBuilder::timeout): the call was
/// cut off and counted as a drop against the node at that moment. A failure of the node, not
/// overload of this instance: answer 504.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimedOut;

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the node did not answer within the pool's timeout")
    }
}

impl std::error::Error for TimedOut {}
