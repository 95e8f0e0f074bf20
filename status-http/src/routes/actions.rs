//! The admin API's calls: every route that checks the token, each call in the audit trail
//! (refused ones included, apart).

use axum::routing::{get, post, put};
use axum::Router;

use super::state::AppState;
use crate::admin;

/// The admin routes, to be wrapped in the audit trail's layer.
pub(super) fn routes() -> Router<AppState> {
    let actions = Router::new()
        .route("/admin/audit", get(crate::trail::audit))
        .route("/admin/mutes", get(crate::mutes::mutes))
        .route(
            "/healthcheck/dependencies/{id}/refresh",
            post(admin::refresh),
        )
        .route(
            "/features/{name}/override",
            put(admin::set_override).delete(admin::clear_override),
        )
        .route("/admin/drain", put(admin::drain).delete(admin::undrain))
        .route(
            "/admin/mutes/{dependency}",
            put(crate::mutes::mute).delete(crate::mutes::unmute),
        );
    #[cfg(feature = "history")]
    let actions = actions
        .route("/admin/history/audit", get(crate::trail::history_audit))
        .route(
            "/admin/exclusions",
            get(crate::history::exclusions::list).post(crate::history::exclusions::exclude),
        )
        .route(
            "/admin/exclusions/{id}",
            axum::routing::delete(crate::history::exclusions::remove),
        )
        .route("/admin/reports/sla", get(crate::history::sla::report));
    actions
}
