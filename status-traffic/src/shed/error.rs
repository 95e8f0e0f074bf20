//! Why the shedding layer refused a request; each is a small type passed as a `BoxError`, as
//! tower's own middleware errors are.

use std::fmt;

/// The queue was full (or the request was pushed out of it by one of higher priority):
/// answer 429.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueFull;

/// The request waited in the queue longer than the queue timeout, and was never processed:
/// answer 503.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueTimeout;

/// The request ran past the total deadline; its work was cancelled: answer 503.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elapsed;

impl fmt::Display for QueueFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overloaded: the queue is full")
    }
}

impl fmt::Display for QueueTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overloaded: waited too long in the queue")
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("overloaded: the deadline passed")
    }
}

impl std::error::Error for QueueFull {}
impl std::error::Error for QueueTimeout {}
impl std::error::Error for Elapsed {}
