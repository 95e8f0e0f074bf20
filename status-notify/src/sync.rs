//! The lock helper: a panic in one sink or listener must not take notifications down with it,
//! and every guarded state here stays consistent between statements.

use std::sync::{Mutex, MutexGuard, PoisonError};

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
