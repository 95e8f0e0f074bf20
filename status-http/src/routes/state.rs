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
use crate::metrics::{Metrics, MetricsState};
use crate::probes::ProbeState;

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
    /// The public page: its routers are merged into the router as it is built.
    #[cfg(feature = "page")]
    pub(super) page: status_page::StatusPage,
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
}

/// Every area's state, made of the builder's settings and the probes' state.
#[allow(clippy::needless_pass_by_value, unused_mut)] // consumed by the areas that features bring
pub(super) fn assemble(mut routes: super::Routes, probes: ProbeState) -> AppState {
    let present = probes.present.clone();
    #[cfg(feature = "page")]
    let page = routes.status_page.take().unwrap_or_else(|| {
        #[cfg(feature = "subscribers")]
        let tell = routes.page.subscriptions.is_some();
        let page = status_page::StatusPage::new(
            routes.registry.clone(),
            routes.history.clone(),
            present
                .appname
                .clone()
                .unwrap_or_else(|| routes.registry.appname().to_owned()),
            std::mem::take(&mut routes.page),
        );
        // The deprecated `Routes::subscriptions`: its subscribers are told from here on, on
        // the runtime the routes are built on.
        #[cfg(feature = "subscribers")]
        if tell {
            page.spawn_teller();
        }
        page
    });
    #[cfg(feature = "dashboard")]
    let dashboard = Arc::new({
        #[allow(unused_mut)]
        let mut dashboard = crate::dashboard::DashboardState::new(
            routes.registry.clone(),
            present.clone(),
            routes.panels,
        );
        #[cfg(feature = "history")]
        {
            dashboard.history = routes.history.is_some();
        }
        dashboard
    });
    #[cfg(all(feature = "dashboard", feature = "metrics"))]
    {
        #[allow(unused_mut)]
        let mut limits = vec![Arc::clone(&dashboard.streams)];
        #[cfg(feature = "page")]
        limits.push(page.streams());
        routes.metrics.push(Box::new(move |registry| {
            crate::streams::register_metrics(limits, registry);
        }));
    }
    AppState(Arc::new(Areas {
        probes: Arc::new(probes),
        admin: Arc::new(AdminState {
            registry: routes.registry.clone(),
            present: present.clone(),
        }),
        auth: routes
            .admin_auth
            .take()
            .unwrap_or_else(|| AdminAuth::new(routes.admin_token.as_deref().unwrap_or_default())),
        audit: routes.audit.clone(),
        #[cfg(feature = "dashboard")]
        dashboard,
        #[cfg(feature = "metrics")]
        metrics: Arc::new(MetricsState {
            metrics: Metrics::new(&routes.registry, routes.metrics),
            registry: routes.registry.clone(),
        }),
        #[cfg(feature = "fleet")]
        fleet: Arc::new(crate::fleet::FleetState {
            #[cfg(feature = "dashboard")]
            hostname: routes.registry.hostname().to_owned(),
            fleet: routes.fleet,
        }),
        #[cfg(feature = "history")]
        history: Arc::new({
            #[allow(unused_mut)]
            let mut history = crate::history::HistoryState::new(
                routes.registry.clone(),
                routes.history,
                &routes.audit,
                routes.public_view,
            );
            #[cfg(feature = "page")]
            {
                history.public_groups = page
                    .public_groups()
                    .iter()
                    .map(|g| g.group().to_owned())
                    .collect();
            }
            history
        }),
        #[cfg(feature = "page")]
        page,
    }))
}
