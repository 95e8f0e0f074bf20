//! The router of the HTTP contract and its options, and the state it is assembled with.

mod actions;
mod areas;
#[cfg(feature = "page")]
mod page;
mod state;

use axum::extract::DefaultBodyLimit;
use axum::http::header::CACHE_CONTROL;
use axum::http::HeaderValue;
use axum::routing::get;
use axum::Router;
use status_core::Registry;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::audit::AuditLog;
use crate::body::BODY_LIMIT;
#[cfg(feature = "metrics")]
use crate::metrics::MetricsHook;
use crate::middleware::RequestGuardLayer;
#[cfg(feature = "dashboard")]
use crate::panel::Panel;
use crate::present::Presentation;
use crate::probes::ProbeState;
use crate::{admin, probes, CodeMap};

/// Configures the router of the HTTP contract; see [`routes`](crate::routes) for the
/// defaults.
///
/// # Example
///
/// ```
/// use axum::http::StatusCode;
/// use status_core::{CheckStatus, Registry};
/// use status_http::{CodeMap, Routes};
///
/// let registry = Registry::builder().appname("shop").build();
/// let app: axum::Router = Routes::new(&registry)
///     .admin_token("s3cret")
///     .codes(CodeMap::default().with(CheckStatus::Outage, StatusCode::from_u16(512).unwrap()))
///     .build();
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct Routes {
    registry: Registry,
    admin_token: Option<String>,
    admin_auth: Option<crate::AdminAuth>,
    codes: CodeMap,
    public_view: bool,
    appname: Option<String>,
    #[cfg(feature = "metrics")]
    metrics: Vec<MetricsHook>,
    #[cfg(feature = "dashboard")]
    panels: Vec<Panel>,
    #[cfg(feature = "fleet")]
    fleet: Option<crate::fleet::Fleet>,
    #[cfg(feature = "fleet")]
    fleet_aware: Option<(String, String)>,
    readiness_group: Option<String>,
    probes: Option<status_core::Probes>,
    audit: AuditLog,
    #[cfg(feature = "history")]
    history: Option<status_history::History>,
    #[cfg(feature = "page")]
    page: status_page::Settings,
    #[cfg(feature = "page")]
    status_page: Option<status_page::StatusPage>,
    #[cfg(feature = "mcp")]
    mcp: Option<crate::Mcp>,
}

impl std::fmt::Debug for Routes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("registry", &self.registry)
            .field("admin_token", &self.admin_token.as_ref().map(|_| ".."))
            .field("codes", &self.codes)
            .field("public_view", &self.public_view)
            .field("appname", &self.appname)
            .finish_non_exhaustive()
    }
}

impl Routes {
    /// Routes serving `registry`: no admin token (admin calls answer 403), default codes,
    /// detailed view.
    pub fn new(registry: &Registry) -> Self {
        Self {
            registry: registry.clone(),
            admin_token: None,
            admin_auth: None,
            codes: CodeMap::default(),
            public_view: false,
            appname: None,
            #[cfg(feature = "metrics")]
            metrics: Vec::new(),
            #[cfg(feature = "dashboard")]
            panels: Vec::new(),
            #[cfg(feature = "fleet")]
            fleet: None,
            #[cfg(feature = "fleet")]
            fleet_aware: None,
            readiness_group: None,
            probes: None,
            audit: AuditLog::new(),
            #[cfg(feature = "history")]
            history: None,
            #[cfg(feature = "page")]
            page: status_page::Settings::default(),
            #[cfg(feature = "page")]
            status_page: None,
            #[cfg(feature = "mcp")]
            mcp: None,
        }
    }

    /// Answers liveness, readiness and startup by `probes` (the core's one composition: a
    /// bound group, the fleet's excuse): give the same [`status_core::Probes`] to gRPC
    /// (`status_grpc::HealthService::probes`) and the two can never disagree.
    /// [`readiness_group`](Self::readiness_group) and `fleet_aware_readiness` add to it.
    pub fn probes(mut self, probes: status_core::Probes) -> Self {
        self.probes = Some(probes);
        self
    }

    /// Binds readiness to the probe group `name` (see `status_core::Group`):
    /// `/healthcheck/ready` then answers by that group's rule, its condition, and holds and
    /// startup as the group counts them. The group must be registered before the routes are
    /// built ([`build`](Self::build) panics, [`try_build`](Self::try_build) errs).
    pub fn readiness_group(mut self, name: impl Into<String>) -> Self {
        self.readiness_group = Some(name.into());
        self
    }

    /// Serves `history` (attached to the same registry): uptime and SLA over any window
    /// (`GET /healthcheck/uptime`, `/healthcheck/dependencies/{id}/uptime`,
    /// `/healthcheck/groups/{name}/uptime`), the history's objectives (`GET
    /// /healthcheck/slos`, `/healthcheck/slos/{name}`, and their gauges in `/metrics`), the
    /// monthly report (`GET /healthcheck/report`),
    /// and the audit trail kept across restarts (`GET /admin/history/audit`): every admin
    /// call made with the token is recorded there too (calls refused for their credentials
    /// stay in memory only, so that a flood cannot fill the disk). `/metrics` gains the
    /// store's counters. Without it these routes answer 404.
    #[cfg(feature = "history")]
    pub fn history(mut self, history: status_history::History) -> Self {
        #[cfg(feature = "metrics")]
        {
            let metrics = history.clone();
            self.metrics.push(Box::new(move |registry| {
                crate::history::register_metrics(&metrics, registry);
                crate::history::slos::register_metrics(&metrics, registry);
            }));
        }
        self.history = Some(history);
        self
    }

    /// Keeps the audit trail in `log` (a new one by default): share it with the layer of
    /// your own admin routes ([`AuditLog::layer`]) to keep one trail at `GET /admin/audit`.
    pub fn audit(mut self, log: AuditLog) -> Self {
        self.audit = log;
        self
    }

    /// The application name reports carry, instead of the registry's.
    pub fn appname(mut self, appname: impl Into<String>) -> Self {
        self.appname = Some(appname.into());
        self
    }

    /// Enables the admin API with this bearer token, as one operator named `admin` (blank
    /// disables it). [`admin_auth`](Self::admin_auth) names each operator.
    pub fn admin_token(mut self, token: impl Into<String>) -> Self {
        self.admin_token = Some(token.into());
        self
    }

    /// Enables the admin API for these operators, each with a token of their own
    /// ([`AdminAuth::parse`](crate::AdminAuth::parse): `alice:T1,bob:T2:read-only`): the
    /// audit trail's actor of each act is the operator whose token made it, a read-only
    /// operator may call `GET` routes only, and [`AdminAuth::revoke`](crate::AdminAuth::revoke)
    /// takes a token back at once. In place of [`admin_token`](Self::admin_token) for the
    /// admin API; MCP keeps the admin token given there, if any.
    pub fn admin_auth(mut self, auth: crate::AdminAuth) -> Self {
        self.admin_auth = Some(auth);
        self
    }

    /// Which HTTP status answers which system status; whether a status serves is the
    /// registry's [`ServePolicy`](status_core::ServePolicy) (see [`CodeMap`]).
    pub fn codes(mut self, codes: CodeMap) -> Self {
        self.codes = codes;
        self
    }

    /// Serves the public view: no error chains, and failures' messages replaced by their
    /// status, for an endpoint reachable from outside.
    pub fn public_view(mut self, public: bool) -> Self {
        self.public_view = public;
        self
    }

    /// The router. Mount it anywhere; its paths are relative.
    ///
    /// Building registers a listener on the registry to count checks for `/metrics`.
    ///
    /// # Panics
    ///
    /// When readiness is bound to a probe group the registry does not have (a typo would
    /// leave `/healthcheck/ready` failing for ever), or the page's settings cannot work:
    /// register the group first, mend the settings, or use [`try_build`](Self::try_build).
    pub fn build(self) -> Router {
        self.try_build()
            .unwrap_or_else(|e| panic!("status_http::Routes::build: {e}"))
    }

    /// The router, or why not.
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_not_found`] when readiness is bound to a probe group the
    /// registry does not have; [`status_core::Error::is_invalid`] when the page's settings
    /// cannot work (`StatusPageSettings::check`: a subscriptions' secret too short, a
    /// malformed SMTP URL).
    pub fn try_build(mut self) -> Result<Router, status_core::Error> {
        let present = Presentation {
            public: self.public_view,
            appname: self.appname.take(),
        };
        let policy = self.registry.serve_policy();
        let ignored = self.codes.disagreements(policy);
        if !ignored.is_empty() {
            tracing::warn!(
                levels = ?ignored,
                fails_from = %policy.fails_from(),
                "the code map answers an error code at levels the registry's serve policy \
                 serves; they answer 200: to fail them (over HTTP and gRPC alike), build the \
                 registry with RegistryBuilder::serve_policy(ServePolicy::failing_from(..))"
            );
        }
        let mut probes = ProbeState::new(self.registry.clone(), self.codes, present.clone());
        let mut verdicts = self
            .probes
            .take()
            .unwrap_or_else(|| status_core::Probes::new(&self.registry));
        if let Some(group) = self.readiness_group.take() {
            verdicts = verdicts.readiness_group(group);
        }
        #[cfg(feature = "fleet")]
        if let (Some(fleet), Some((instance_id, datacenter))) =
            (&self.fleet, self.fleet_aware.take())
        {
            verdicts = verdicts.excuse(status_fleet::FleetExcuse::shared(
                fleet.source(),
                instance_id,
                datacenter,
            ));
        }
        verdicts.check()?;
        // The page made of this builder's settings: a mistake in them fails here.
        #[cfg(feature = "page")]
        if self.status_page.is_none() {
            self.page.check()?;
        }
        #[cfg(feature = "mcp")]
        let mcp = {
            let mcp = crate::mcp::complete(
                self.mcp
                    .take()
                    .unwrap_or_else(|| crate::Mcp::new(&self.registry)),
                self.admin_token.as_deref(),
                &verdicts,
                #[cfg(feature = "history")]
                self.history.as_ref(),
                #[cfg(feature = "fleet")]
                self.fleet.as_ref(),
            );
            crate::mcp::service(
                mcp,
                #[cfg(feature = "metrics")]
                &mut self.metrics,
            )
        };
        probes.verdicts = verdicts;
        // The guard's body limit at `/mcp` is MCP's own (64 KiB by default), not the admin
        // API's 16 KiB.
        let guard = RequestGuardLayer::new();
        #[cfg(feature = "mcp")]
        let guard = guard.body_limit_at("/mcp", mcp.max_body_bytes());
        let audit = self.audit.clone();
        let registry = self.registry.clone();
        let state = state::assemble(self, probes);
        // The probes a balancer calls many times a second carry no request span: they are
        // the hot path, and a trace of each would drown the others.
        let hot = probes::routes(&state.0.probes, &registry);
        // Every call to a route that checks the token is in the audit trail, refused ones
        // included (apart).
        let actions = actions::routes();
        #[cfg(feature = "page")]
        let actions = actions.merge(state.0.page.admin_router(state.0.auth.clone()));
        // Each act's actor is the operator whose token made it.
        audit.operators(state.0.auth.clone());
        let actions = actions.route_layer(audit.layer());
        let traced = Router::new()
            .route("/healthcheck/dependencies/{id}", get(probes::dependency))
            .route("/features", get(admin::features))
            .route("/features/{name}", get(admin::feature))
            .merge(actions);
        #[cfg(feature = "metrics")]
        let traced = traced.route("/metrics", get(crate::metrics::metrics));
        #[cfg(feature = "dashboard")]
        let traced = crate::dashboard::routes(traced);
        #[cfg(feature = "openapi")]
        let traced = traced.route("/openapi.json", get(crate::openapi::openapi_json));
        #[cfg(feature = "history")]
        let traced = crate::history::routes(traced);
        #[cfg(feature = "page")]
        let traced = traced.merge(state.0.page.router());
        #[cfg(feature = "fleet")]
        let traced = crate::fleet::routes(traced);
        #[cfg(feature = "mcp")]
        let traced = traced.route_service("/mcp", mcp);
        let traced = traced
            .layer(DefaultBodyLimit::max(BODY_LIMIT))
            // A handler's bug answers 500 and is logged; the connection lives on.
            .layer(CatchPanicLayer::custom(crate::error::panicked))
            // A 503 is a probe's expected answer during an outage, not a server failure.
            .layer(
                TraceLayer::new_for_http()
                    .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
            );
        // The public page's routes are what a crowd refreshes during an incident: no request
        // span either.
        #[cfg(feature = "page")]
        let hot = hot.merge(state.0.page.public_router());
        Ok(hot
            .merge(traced)
            .layer(guard)
            .layer(SetResponseHeaderLayer::if_not_present(
                CACHE_CONTROL,
                HeaderValue::from_static("no-store"),
            ))
            .with_state(state))
    }
}
