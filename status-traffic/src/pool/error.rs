//! Why a pool refused a call.

use std::fmt;

/// No node had capacity (every limiter was at its limit, or the pool has no nodes): answer
/// 503 at once instead of queueing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCapacity;

impl fmt::Display for NoCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overloaded: no node of the pool has capacity")
    }
}

impl std::error::Error for NoCapacity {}
