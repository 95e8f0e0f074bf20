use std::time::Duration;

use status_core::Registry;
use tower::Layer;

use super::HealthGate;
use crate::middleware::DEFAULT_RETRY_AFTER;

/// Applies [`HealthGate`]: sheds requests while the system is in OUTAGE.
#[derive(Debug, Clone)]
pub struct HealthGateLayer {
    registry: Registry,
    fail_open: bool,
    explain: bool,
    retry_after: Duration,
}

impl HealthGateLayer {
    /// Gates on `registry`'s system status; closed (shedding) by default, `Retry-After: 10`.
    #[must_use]
    pub fn new(registry: &Registry) -> Self {
        Self {
            registry: registry.clone(),
            fail_open: false,
            explain: false,
            retry_after: DEFAULT_RETRY_AFTER,
        }
    }

    /// Names the dependencies at fault in a rejection's body (`service unavailable: system
    /// is OUTAGE (primary-db is OUTAGE)`). Off by default: a gated route answers the
    /// application's callers, and its body says `service unavailable` without the
    /// dependencies' names, which are the operators'.
    #[must_use]
    pub fn explain(mut self, explain: bool) -> Self {
        self.explain = explain;
        self
    }

    /// Fails open: during an outage, requests still go through, marked with
    /// `x-status-condition: OUTAGE`. Indeed's "failing open": doing some work beats doing
    /// none, for instance when the whole fleet reports an outage.
    #[must_use]
    pub fn fail_open(mut self, fail_open: bool) -> Self {
        self.fail_open = fail_open;
        self
    }

    /// The `Retry-After` of a rejection (whole seconds, at least 1).
    #[must_use]
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }

    pub(super) fn wrap<S>(&self, inner: S) -> HealthGate<S> {
        HealthGate {
            inner,
            registry: self.registry.clone(),
            fail_open: self.fail_open,
            explain: self.explain,
            retry_after: self.retry_after,
        }
    }
}

impl<S> Layer<S> for HealthGateLayer {
    type Service = HealthGate<S>;

    fn layer(&self, inner: S) -> Self::Service {
        self.wrap(inner)
    }
}
