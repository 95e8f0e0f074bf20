//! Fleet-aware readiness: the fleet's view as the core's [`Excuse`].

use std::sync::Arc;

use status_core::{Excuse, Readiness};

use crate::FleetSource;

/// Fleet-aware readiness, for [`Probes::excuse`](status_core::Probes::excuse): instance
/// `instance_id` of `datacenter` stays ready while each of its failing dependencies is
/// shared by its data center (more than half of the others fail it too, and at least two),
/// and fails by its own rule on a failure of its own (see
/// [`FleetView::readiness`](crate::FleetView::readiness)); a shared failure is left to the
/// data center's endpoint. Holds and startup still fail readiness, and a stale view excuses
/// nothing.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use status_core::{Probes, Registry};
/// use status_fleet::{FleetExcuse, FleetView, HealthRule};
///
/// let registry = Registry::new();
/// let view = Arc::new(FleetView::new(Vec::new(), Duration::from_secs(30), HealthRule::default()));
/// let probes = Probes::new(&registry)
///     .excuse(FleetExcuse::new(move || Arc::clone(&view), "web-7", "dc-1"));
/// assert!(format!("{probes:?}").contains("fleet dc-1/web-7"));
/// ```
#[derive(Clone)]
pub struct FleetExcuse {
    source: Arc<dyn FleetSource>,
    instance_id: String,
    datacenter: String,
}

impl FleetExcuse {
    /// `instance_id` of `datacenter`, judged by `source`'s current view.
    #[must_use]
    pub fn new(
        source: impl FleetSource,
        instance_id: impl Into<String>,
        datacenter: impl Into<String>,
    ) -> Self {
        Self::shared(Arc::new(source), instance_id, datacenter)
    }

    /// As [`new`](Self::new), with a source already shared (the one the fleet routes read).
    #[must_use]
    pub fn shared(
        source: Arc<dyn FleetSource>,
        instance_id: impl Into<String>,
        datacenter: impl Into<String>,
    ) -> Self {
        Self {
            source,
            instance_id: instance_id.into(),
            datacenter: datacenter.into(),
        }
    }
}

impl std::fmt::Debug for FleetExcuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Excuse for FleetExcuse {
    fn judge(&self, own: Readiness) -> Readiness {
        self.source
            .view()
            .readiness(&self.datacenter, &self.instance_id, own)
    }

    fn describe(&self) -> String {
        format!("fleet {}/{}", self.datacenter, self.instance_id)
    }
}
