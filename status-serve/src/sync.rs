//! The one lock helper: a lock that survives poisoning. A panic elsewhere must not take the
//! crate's state down with it, and every guarded state here stays consistent between
//! statements.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
