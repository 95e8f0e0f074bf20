//! The page as an application mounts it: made of the registry, the history and what is
//! public, its routers merged into the application's (status-http's `Routes` does: the
//! public routes beside the probes, the admin routes among the audited admin actions, under
//! the one admin token).

use std::sync::Arc;

use axum::extract::FromRef;
use axum::routing::{delete, get, post, put};
use axum::Router;
use status_core::Registry;
use status_history::History;
use status_http_core::auth::AdminAuth;

use crate::{admin, announce, routes, PublicGroup, Publication, StatusPageState};

/// What a status page shows beyond its registry and history: where it is read, the groups
/// it shows, when an incident is public, and its subscribers.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Settings {
    /// The page's address, for the links of its feeds and mail.
    pub url: Option<String>,
    /// The groups shown, under their names for customers.
    pub public: Vec<PublicGroup>,
    /// When an incident is public.
    pub publication: Publication,
    /// How the page takes and tells subscribers; none takes none.
    #[cfg(feature = "subscribers")]
    #[cfg_attr(docsrs, doc(cfg(feature = "subscribers")))]
    pub subscriptions: Option<crate::Subscriptions>,
    /// The origins (`https://shop.example`) whose pages may frame `/status/embed`; none by
    /// default. Each must be an origin ([`is_origin`](crate::is_origin)): others are left
    /// out, and said. The page itself is never framed.
    pub embed_origins: Vec<String>,
}

/// A public status page: the Statuspage v2 documents, the page in each language, badges,
/// feeds, incidents' and maintenances' admin routes, and subscribers.
///
/// Cheap to clone: every clone serves the same caches.
#[derive(Debug, Clone)]
pub struct StatusPage {
    state: Arc<StatusPageState>,
}

impl Settings {
    /// Whether these settings can work, to refuse a mistake at startup rather than find it
    /// at the first visitor or message: every embed origin an origin, and with subscribers,
    /// their secret (when given) at least 32 bytes, the SMTP URL and the sender's address
    /// well formed ([`Subscriptions::check`](crate::Subscriptions::check)).
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_invalid`], saying what is wrong in words for the operator.
    pub fn check(&self) -> Result<(), status_core::Error> {
        if let Some(origin) = self.embed_origins.iter().find(|o| !crate::is_origin(o)) {
            return Err(status_core::Error::invalid(format!(
                "embed origin {origin:?} is not an origin (scheme://host[:port], nothing after)"
            )));
        }
        #[cfg(feature = "subscribers")]
        if let Some(subscriptions) = &self.subscriptions {
            subscriptions.check().map_err(status_core::Error::invalid)?;
            if let Some(secret) = subscriptions.secret.as_ref().filter(|s| s.len() < 32) {
                return Err(status_core::Error::invalid(format!(
                    "the subscriptions' secret is {} bytes: it needs at least 32",
                    secret.len()
                )));
            }
        }
        Ok(())
    }
}

impl StatusPage {
    /// The page of `registry`'s health under the title `name`, its incidents and
    /// announcements read from `history` (without one it shows the components alone).
    ///
    /// # Panics
    ///
    /// When the settings cannot work ([`Settings::check`]): a mistake fails the start. Use
    /// [`try_new`](Self::try_new) to handle it.
    #[must_use]
    pub fn new(
        registry: Registry,
        history: Option<History>,
        name: impl Into<String>,
        settings: Settings,
    ) -> Self {
        Self::try_new(registry, history, name, settings)
            .unwrap_or_else(|e| panic!("status_page::StatusPage::new: {e}"))
    }

    /// The page, or why its settings cannot work ([`Settings::check`]).
    ///
    /// # Errors
    ///
    /// [`status_core::Error::is_invalid`]: an embed origin that is not one, a subscriptions'
    /// secret shorter than 32 bytes, a malformed SMTP URL or sender's address.
    pub fn try_new(
        registry: Registry,
        history: Option<History>,
        name: impl Into<String>,
        settings: Settings,
    ) -> Result<Self, status_core::Error> {
        settings.check()?;
        let state = StatusPageState::new(registry, history, name.into(), settings);
        Ok(Self {
            state: Arc::new(state),
        })
    }

    /// The groups it shows, under their names for customers, in order.
    #[must_use]
    pub fn public_groups(&self) -> &[PublicGroup] {
        &self.state.public
    }

    /// The routes a crowd refreshes: the page (with `html`), the Statuspage v2 documents,
    /// the feeds, the badges. Serve them as the probes are, without a request span: during
    /// an incident they are the hot path.
    pub fn public_router<S>(&self) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        routes::public_routes(Router::new(), &self.state).with_state(Arc::clone(&self.state))
    }

    /// The page's other public routes: its event stream (with `html`) and the subscribers'
    /// door (with `subscribers`).
    pub fn router<S>(&self) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        routes::routes(Router::new()).with_state(Arc::clone(&self.state))
    }

    /// The operators' routes, each behind `auth`: incidents' updates and postmortems, and
    /// announced maintenances. Merge them where the admin calls are audited.
    pub fn admin_router<S>(&self, auth: AdminAuth) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        let router = Router::new()
            .route("/admin/incidents", get(admin::list))
            .route("/admin/incidents/{id}/updates", post(admin::post))
            .route("/admin/incidents/{id}/postmortem", put(admin::postmortem))
            .route(
                "/admin/maintenances",
                get(announce::list).post(announce::announce),
            )
            .route("/admin/maintenances/{id}", delete(announce::cancel));
        #[cfg(feature = "subscribers")]
        let router = router
            .route("/admin/subscribers", get(crate::subscribe::admin::list))
            .route(
                "/admin/subscribers/{id}",
                delete(crate::subscribe::admin::remove),
            );
        router.with_state(Operators {
            page: Arc::clone(&self.state),
            auth,
        })
    }

    /// The bounds of the page's event streams, for their counts in `/metrics`.
    #[cfg(feature = "html")]
    #[cfg_attr(docsrs, doc(cfg(feature = "html")))]
    #[must_use]
    pub fn streams(&self) -> Arc<status_http_core::streams::StreamLimits> {
        Arc::clone(&self.state.streams)
    }

    /// What tells the page's subscribers, for the application to spawn (as it drives
    /// tonic-health's reporter): `None` when the page takes no subscribers or keeps no
    /// history. Each round claims an event's deliveries at once in the store (a fleet sends
    /// each message once) and sends them concurrently, at most
    /// [`Subscriptions::concurrency`](crate::Subscriptions::concurrency) at a time. It ends
    /// when every clone of the page and its routers are dropped.
    ///
    /// ```no_run
    /// # async fn run(page: status_page::StatusPage) {
    /// if let Some(teller) = page.teller() {
    ///     tokio::spawn(teller);
    /// }
    /// # }
    /// ```
    #[cfg(feature = "subscribers")]
    #[cfg_attr(docsrs, doc(cfg(feature = "subscribers")))]
    #[must_use]
    pub fn teller(&self) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        crate::subscribe::teller(&self.state)
    }

    /// Spawns [`teller`](Self::teller) on the current runtime (without one: a warning).
    #[cfg(feature = "subscribers")]
    #[doc(hidden)] // for status-http's deprecated `Routes::subscriptions`
    pub fn spawn_teller(&self) {
        crate::subscribe::start(&self.state);
    }
}

/// The admin routes' state: the page and the token guard.
#[derive(Debug, Clone)]
struct Operators {
    page: Arc<StatusPageState>,
    auth: AdminAuth,
}

impl FromRef<Operators> for Arc<StatusPageState> {
    fn from_ref(operators: &Operators) -> Self {
        Arc::clone(&operators.page)
    }
}

impl FromRef<Operators> for AdminAuth {
    fn from_ref(operators: &Operators) -> Self {
        operators.auth.clone()
    }
}
