//! What every handler shares.

#[cfg(feature = "dashboard")]
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use axum::extract::FromRef;
use status_core::Registry;

use crate::auth::AdminAuth;
#[cfg(feature = "dashboard")]
use crate::dashboard::LiveFeed;
#[cfg(feature = "metrics")]
use crate::metrics::Metrics;
#[cfg(feature = "dashboard")]
use crate::panel::Panel;
use crate::present::Presentation;
use crate::render::{Body, RenderCache};
use crate::CodeMap;

#[derive(Debug)]
pub(crate) struct AppState {
    pub(crate) registry: Registry,
    pub(crate) admin: AdminAuth,
    pub(crate) codes: CodeMap,
    /// How reports are shown: public view, application name.
    pub(crate) present: Presentation,
    /// The probe bodies of the current report generation.
    pub(crate) rendered: RenderCache,
    /// The liveness bodies (JSON, text), serialized once.
    pub(crate) live: [Body; 2],
    /// The dashboard's shared live renders.
    #[cfg(feature = "dashboard")]
    pub(crate) feed: Arc<LiveFeed>,
    /// Dashboard event streams open now.
    #[cfg(feature = "dashboard")]
    pub(crate) event_streams: AtomicUsize,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Metrics,
    /// The dashboard's panels.
    #[cfg(feature = "dashboard")]
    pub(crate) panels: Vec<Panel>,
    /// The fleet view, if this instance has one.
    #[cfg(feature = "fleet")]
    pub(crate) fleet: Option<crate::fleet::Fleet>,
    /// Fleet-aware readiness: this instance's name and data center.
    #[cfg(feature = "fleet")]
    pub(crate) fleet_aware: Option<crate::fleet::Me>,
}

impl FromRef<Arc<AppState>> for AdminAuth {
    fn from_ref(state: &Arc<AppState>) -> Self {
        state.admin.clone()
    }
}
