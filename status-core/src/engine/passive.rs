//! Pushed results: a dependency whose results come from live traffic instead of a check.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::entry::Entry;
use super::run::Executed;
use super::{Inner, Registry};
use crate::check::CheckOutcome;
use crate::event::RunOutcome;
use crate::{CheckResult, DependencyId, DependencyInfo, Error};

/// Records results of a passive dependency (see [`Registry::add_passive`]). Cheap to clone.
///
/// Each result goes through the same hysteresis, history, features, events and metrics as a
/// polled check's. Record what a window of traffic amounted to (an error rate, a shedding
/// state), not every request: each record is an event for every listener.
#[derive(Clone)]
pub struct Reporter {
    inner: Weak<Inner>,
    entry: Arc<Entry>,
}

impl Reporter {
    /// The dependency's id.
    #[must_use]
    pub fn id(&self) -> &DependencyId {
        &self.entry.info.id
    }

    /// Records `outcome` now. Answers the result as recorded, or `None` when the dependency
    /// was removed (or the registry dropped).
    pub fn record(&self, outcome: impl Into<CheckOutcome>) -> Option<Arc<CheckResult>> {
        self.record_timed(outcome, Duration::ZERO)
    }

    /// Records `outcome`, which took `duration` to observe (shown as the check's duration).
    pub fn record_timed(
        &self,
        outcome: impl Into<CheckOutcome>,
        duration: Duration,
    ) -> Option<Arc<CheckResult>> {
        let inner = self.inner.upgrade()?;
        let outcome = outcome.into();
        let executed = Executed {
            kind: RunOutcome::of(outcome.status()),
            outcome,
            duration,
            finished: inner.clock.now(),
        };
        inner.record(&self.entry, executed)
    }
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter")
            .field("id", &self.entry.info.id)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Registers a passive dependency, whose results are pushed through the returned
    /// [`Reporter`] by the mechanisms that watch live traffic (an error counter, a load
    /// shedder, a node pool) instead of being polled.
    ///
    /// It starts OK with "No traffic yet", and does not hold up startup. It is never stale:
    /// when nothing was recorded for its period it keeps its last status and says `idle`,
    /// because no traffic is not a failure.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), status_core::Error> {
    /// use status_core::{CheckStatus, Dependency, Registry, Urgency};
    ///
    /// let registry = Registry::new();
    /// let errors = registry.add_passive(
    ///     Dependency::passive("checkout-errors").urgency(Urgency::Weak).failures_before_outage(1).build_info()?,
    /// )?;
    /// errors.record((CheckStatus::Outage, "42% of requests failed"));
    /// assert_eq!(registry.condition(), CheckStatus::Minor);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::is_duplicate`] if its id is taken; [`Error::is_cycle`] if its parents lead
    /// back to it. Nothing changes on error.
    pub fn add_passive(&self, info: DependencyInfo) -> Result<Reporter, Error> {
        let entry = self.inner.register(Arc::new(info), None)?;
        Ok(Reporter {
            inner: Arc::downgrade(&self.inner),
            entry,
        })
    }
}
