//! Overload is not failure: the refusals of the shedding layer and of node pools are marked
//! so that nothing counting failures of live traffic mistakes them for the instance failing.
//!
//! A burst is what shedding is for. If the failure counter that feeds the culler counted the
//! shedding layer's 429s and 503s as failures, a burst would cull healthy instances, and a
//! fleet-wide burst would cull up to the whole budget while the fleet is short of capacity.
//! So every refusal carries a mark, whatever order the layers are in:
//!
//! - as an error, it is one of [`QueueFull`], [`QueueTimeout`], [`Elapsed`] or
//!   [`NoCapacity`]; [`is_overload`] says so (through a chain of `source()`s too);
//! - as an HTTP answer (status-http's `traffic::overloaded`), the response carries the
//!   [`Overload`] extension.
//!
//! The classifiers of this crate and of status-http skip both: a refusal counts neither as a
//! failure nor as a request ([`count::Counted::Skipped`](crate::count::Counted::Skipped)).

use std::error::Error as StdError;

use crate::pool::NoCapacity;
use crate::shed::{Elapsed, QueueFull, QueueTimeout};

/// The mark of an answer that refuses work because of overload (a full queue, a queue
/// timeout, the shedding deadline, a pool without capacity), not because anything failed.
/// Carried as a response extension (`response.extensions().get::<Overload>()`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Overload;

/// Whether `error`, or an error in its chain of sources, is a refusal of an overload
/// mechanism of this crate.
///
/// # Example
///
/// ```
/// use status_traffic::overload::is_overload;
/// use status_traffic::shed::QueueFull;
/// use tower::BoxError;
///
/// assert!(is_overload(&*BoxError::from(QueueFull)));
/// assert!(!is_overload(&*BoxError::from("connection refused")));
/// ```
#[must_use]
pub fn is_overload(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<QueueFull>()
            || error.is::<QueueTimeout>()
            || error.is::<Elapsed>()
            || error.is::<NoCapacity>()
        {
            return true;
        }
        next = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;

    #[derive(Debug)]
    struct Wrapped(Box<dyn StdError + Send + Sync>);

    impl fmt::Display for Wrapped {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the call failed")
        }
    }

    impl StdError for Wrapped {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn every_refusal_is_overload_even_wrapped() {
        for refusal in [
            Box::new(QueueFull) as Box<dyn StdError + Send + Sync>,
            Box::new(QueueTimeout),
            Box::new(Elapsed),
            Box::new(NoCapacity),
        ] {
            assert!(is_overload(&*refusal));
            assert!(is_overload(&Wrapped(refusal)));
        }
        assert!(!is_overload(&Wrapped("boom".into())));
        assert!(!is_overload(&std::io::Error::other("reset")));
    }
}
