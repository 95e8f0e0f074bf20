//! The one lock helper: a lock that survives poisoning. A panic elsewhere must not take the
//! crate's state down with it, and every guarded state here stays consistent between
//! statements.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `ready` for a notification.
pub(crate) fn wait<'a, T>(ready: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    ready.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `ready` for a notification or `left`, whichever comes first.
pub(crate) fn wait_timeout<'a, T>(
    ready: &Condvar,
    guard: MutexGuard<'a, T>,
    left: Duration,
) -> MutexGuard<'a, T> {
    ready
        .wait_timeout(guard, left)
        .unwrap_or_else(PoisonError::into_inner)
        .0
}
