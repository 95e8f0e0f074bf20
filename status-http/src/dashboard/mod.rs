//! The operator dashboard: `/status`, its live updates at `/status/events`, and its assets.
//!
//! Rendered on the server with askama from `web/templates` (escaping everything it prints),
//! with its CSS, JavaScript and logo from `web/static` embedded in the binary: no file at run
//! time, no request to anywhere but this server. Without JavaScript the page renders whole;
//! with it, it updates in place from server-sent events and lets operators act.

mod filter;
mod live;
mod view;

use self::live::LiveFeed;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
#[cfg(feature = "serve")]
use axum::Extension;
use futures::future::BoxFuture;
use futures::Stream;

use self::view::{Filter, View};
use crate::error::ApiError;
use crate::panel::Panel;
use crate::present::Presentation;
use crate::query::Params;
#[cfg(feature = "serve")]
use crate::serve::Closing;

/// What the dashboard's routes share.
#[derive(Debug)]
pub(crate) struct DashboardState {
    pub(crate) registry: status_core::Registry,
    /// How reports are shown: public view, application name.
    pub(crate) present: Presentation,
    /// The panels, in the order added.
    pub(crate) panels: Vec<Panel>,
    /// The shared live renders.
    pub(crate) feed: Arc<LiveFeed>,
    /// The dashboard's event streams: 64 at most, 8 from one address.
    pub(crate) streams: Arc<crate::streams::StreamLimits>,
    /// Whether `/status/history` is served: the page links to it.
    pub(crate) history: bool,
}

impl DashboardState {
    pub(crate) fn new(
        registry: status_core::Registry,
        present: Presentation,
        panels: Vec<Panel>,
    ) -> Self {
        Self {
            registry,
            present,
            panels,
            feed: Arc::new(LiveFeed::new()),
            streams: crate::streams::StreamLimits::new("dashboard", MAX_EVENT_STREAMS, 8),
            history: false,
        }
    }
}

pub(crate) use status_http_core::CSP;

/// Dashboard event streams served at once; more answer 503 (and more than 8 from one address
/// 429).
pub(crate) const MAX_EVENT_STREAMS: usize = 64;

#[derive(Template)]
#[template(path = "dashboard.html")]
struct Page<'a> {
    view: &'a View,
    history: bool,
}

#[derive(Template)]
#[template(path = "live.html")]
struct Live<'a> {
    view: &'a View,
}

fn render(template: &impl Template) -> Result<String, ApiError> {
    template.render().map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot render the dashboard: {e}"),
        )
    })
}

/// GET `/status`.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status", tag = "operators",
    params(
        ("status" = Option<String>, Query, nullable = false, description = "Show only dependencies in these statuses"),
        ("urgency" = Option<String>, Query, nullable = false, description = "Show only dependencies of these urgencies"),
        ("tag" = Option<String>, Query, nullable = false, description = "Show only dependencies with this tag"),
        ("q" = Option<String>, Query, nullable = false, description = "Show only dependencies matching this text"),
    ),
    responses(
        (status = 200, description = "The dashboard", content_type = "text/html", body = String),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn page(
    State(state): State<Arc<DashboardState>>,
    Params(filter): Params<Filter>,
) -> Result<Response, ApiError> {
    let view = view::build(&state.registry, filter, &state.present, &state.panels);
    let html = render(&Page {
        view: &view,
        history: state.history,
    })?;
    let mut response = Html(html).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    Ok(response)
}

/// GET `/status/events`: the live part of the page, rendered again after each change
/// (debounced, at most twice a second; every 5 s when checks only refreshed timestamps), once
/// for all open pages. The first event comes at once, so a reconnecting page is never behind.
///
/// Under [`serve`](crate::serve()), the stream ends when the server shuts down, with a last
/// `closing` event (the page then reconnects, reaching another instance behind the balancer).
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/events", tag = "operators",
    responses(
        (status = 200, description = "Server-sent events: `live` renders, a last `closing` on shutdown", content(("text/event-stream"))),
        (status = 429, description = "Too many streams from this address (`Retry-After`)", body = crate::schema::Error),
        (status = 503, description = "Too many streams open (`Retry-After`)", body = crate::schema::Error),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn events(
    State(state): State<Arc<DashboardState>>,
    peer: crate::streams::Peer,
    #[cfg(feature = "serve")] closing: Option<Extension<Closing>>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, crate::streams::Refused> {
    let slot = state.streams.try_open(crate::streams::address(peer))?;
    let renders = live::subscribe(&state);
    #[cfg(feature = "serve")]
    let closed: BoxFuture<'static, ()> = match closing {
        Some(Extension(closing)) => Box::pin(closing.closed()),
        None => Box::pin(std::future::pending()),
    };
    #[cfg(not(feature = "serve"))]
    let closed: BoxFuture<'static, ()> = Box::pin(std::future::pending());
    // The stream keeps the state (and its feed) alive as long as it is open, and its slot.
    let stream =
        futures::stream::unfold(Some((renders, (state, slot), closed)), |open| async move {
            let (mut renders, slot, mut closed) = open?;
            loop {
                tokio::select! {
                    () = &mut closed => {
                        let last = SseEvent::default()
                            .event("closing")
                            .data("the server is shutting down");
                        return Some((Ok(last), None));
                    }
                    changed = renders.changed() => changed.ok()?,
                }
                let html = renders.borrow_and_update().clone();
                if let Some(html) = html {
                    let event = SseEvent::default()
                        .event("live")
                        .retry(Duration::from_secs(1))
                        .data(&*html);
                    return Some((Ok(event), Some((renders, slot, closed))));
                }
            }
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// GET `/status/assets/{file}`: the embedded CSS, JavaScript and logo.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/status/assets/{file}", tag = "operators",
    params(("file" = String, Path, description = "dashboard.css, dashboard.js or logo.svg")),
    responses(
        (status = 200, description = "The asset", content(("text/css"), ("text/javascript"), ("image/svg+xml"))),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    let (body, content_type): (&'static str, &'static str) = match file.as_str() {
        "dashboard.css" => (
            include_str!("../../../web/static/dashboard.css"),
            "text/css; charset=utf-8",
        ),
        "dashboard.js" => (
            include_str!("../../../web/static/dashboard.js"),
            "text/javascript; charset=utf-8",
        ),
        "history.js" => (
            include_str!("../../../web/static/history.js"),
            "text/javascript; charset=utf-8",
        ),
        "statuspage.js" => (
            include_str!("../../../web/static/statuspage.js"),
            "text/javascript; charset=utf-8",
        ),
        "logo.svg" => (
            include_str!("../../../web/static/logo.svg"),
            "image/svg+xml",
        ),
        _ => return ApiError::not_found("asset", &file).into_response(),
    };
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=300"),
            ),
            (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        ],
        body,
    )
        .into_response()
}

/// Adds the dashboard's routes: the page, its live events, its assets.
pub(crate) fn routes<S>(router: axum::Router<S>) -> axum::Router<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<DashboardState>: axum::extract::FromRef<S>,
{
    use axum::routing::get;
    router
        .route("/status", get(page))
        .route("/status/events", get(events))
        .route("/status/assets/{file}", get(asset))
}
