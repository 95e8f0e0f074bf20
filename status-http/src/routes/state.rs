//! The router's state: one sub-state per area, assembled here and nowhere else. Each
//! handler extracts only its area's part through [`FromRef`] (axum's substates); no area
//! knows of another's, nor of this.

use std::sync::Arc;

use axum::extract::FromRef;

use crate::admin::AdminState;
use crate::audit::AuditLog;
use crate::auth::AdminAuth;
#[cfg(feature = "dashboard")]
use crate::dashboard::DashboardState;
#[cfg(feature = "fleet")]
use crate::fleet::FleetState;
#[cfg(feature = "history")]
use crate::history::HistoryState;
#[cfg(feature = "metrics")]
use crate::metrics::MetricsState;
use crate::probes::ProbeState;
#[cfg(feature = "history")]
use crate::statuspage::StatusPageState;

/// Every area's state, each behind its own `Arc`, the whole behind one more: the router
/// clones its state for every request, and one count is cheaper than seven.
#[derive(Debug, Clone)]
pub(super) struct AppState(pub(super) Arc<Areas>);

/// The areas' states.
#[derive(Debug)]
pub(super) struct Areas {
    pub(super) probes: Arc<ProbeState>,
    pub(super) admin: Arc<AdminState>,
    pub(super) auth: AdminAuth,
    pub(super) audit: AuditLog,
    #[cfg(feature = "dashboard")]
    pub(super) dashboard: Arc<DashboardState>,
    #[cfg(feature = "metrics")]
    pub(super) metrics: Arc<MetricsState>,
    #[cfg(feature = "fleet")]
    pub(super) fleet: Arc<FleetState>,
    #[cfg(feature = "history")]
    pub(super) history: Arc<HistoryState>,
    #[cfg(feature = "history")]
    pub(super) statuspage: Arc<StatusPageState>,
}

/// `impl FromRef<AppState> for $sub` reading the field `$field`.
macro_rules! substate {
    ($($(#[$cfg:meta])* $field:ident: $sub:ty),* $(,)?) => {$(
        $(#[$cfg])*
        impl FromRef<AppState> for $sub {
            fn from_ref(state: &AppState) -> Self {
                state.0.$field.clone()
            }
        }
    )*};
}

substate! {
    probes: Arc<ProbeState>,
    admin: Arc<AdminState>,
    auth: AdminAuth,
    audit: AuditLog,
    #[cfg(feature = "dashboard")]
    dashboard: Arc<DashboardState>,
    #[cfg(feature = "metrics")]
    metrics: Arc<MetricsState>,
    #[cfg(feature = "fleet")]
    fleet: Arc<FleetState>,
    #[cfg(feature = "history")]
    history: Arc<HistoryState>,
    #[cfg(feature = "history")]
    statuspage: Arc<StatusPageState>,
}
