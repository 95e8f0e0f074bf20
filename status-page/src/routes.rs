//! The page's routes: those a crowd refreshes, and the rest.

use std::sync::Arc;

#[cfg(feature = "subscribers")]
use super::subscribe;
use super::{badge, feed, hot, StatusPageState};
#[cfg(feature = "html")]
use super::{page, served};

/// Adds the routes a crowd refreshes: the page (with `dashboard`), Statuspage v2 JSON, feeds,
/// badges. Served as the probes are, without a request span: during an incident they are the
/// hot path, and a trace of each would drown the others.
pub(crate) fn public_routes<S>(
    router: axum::Router<S>,
    state: &Arc<StatusPageState>,
) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<StatusPageState>: axum::extract::FromRef<S>,
{
    use axum::routing::{get, get_service};
    let router = hot::PATHS
        .iter()
        .enumerate()
        .fold(router, |router, (index, path)| {
            router.route(
                path,
                get_service(hot::Document::new(Arc::clone(state), index)),
            )
        })
        .route("/history.atom", get(feed::atom))
        .route("/history.rss", get(feed::rss))
        .route("/badge/{file}", get(badge::level))
        .route("/badge/{name}/uptime.svg", get(badge::uptime))
        .route("/status/embed", get(super::widget::embed));
    #[cfg(feature = "calendar")]
    let router = router.route("/status/maintenances.ics", get(super::calendar::ics));
    #[cfg(feature = "html")]
    let router = router.route(
        "/status/page",
        get_service(served::Page::new(Arc::clone(state))),
    );
    router
}

/// Adds the page's other routes: its event stream (with `dashboard`) and the subscribers'
/// door (with `subscribers`).
pub(crate) fn routes<S>(router: axum::Router<S>) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<StatusPageState>: axum::extract::FromRef<S>,
{
    #[cfg(any(feature = "html", feature = "subscribers"))]
    use axum::routing::get;
    #[cfg(feature = "html")]
    let router = router.route("/status/page/events", get(page::events));
    #[cfg(feature = "subscribers")]
    let router = router
        .route(
            "/status/page/subscriptions",
            axum::routing::post(subscribe::subscribe)
                .layer(axum::extract::DefaultBodyLimit::max(4096)),
        )
        .route(
            "/status/page/subscriptions/confirm",
            get(subscribe::confirm).post(subscribe::confirm_post),
        )
        .route(
            "/status/page/subscriptions/unsubscribe",
            get(subscribe::unsubscribe).post(subscribe::unsubscribe_post),
        );
    router
}
