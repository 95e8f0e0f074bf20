//! The Statuspage v2 documents as hand-written services (as the probes are): what a crowd
//! refreshes during an incident. While what is published holds, the answer is made on the spot from the bytes made of it
//! (no extractor, no boxed handler future); else the handler's way, which publishes anew.

use std::sync::Arc;

use axum::http::header::CACHE_CONTROL;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use super::json::{document, Render};
#[cfg(feature = "openapi")]
use super::wire::{ComponentsDoc, IncidentsDoc, MaintenancesDoc, StatusDoc, SummaryDoc};
use super::StatusPageState;
use crate::render::{Body, Conditional};
use crate::respond::JSON;
#[cfg(feature = "openapi")]
use axum::extract::State;

/// A public body as served: its entity tag (304 for a client holding it), compressed when
/// the client accepts it, never cached without revalidation.
pub(super) fn respond(body: &Body, conditional: &Conditional) -> Response {
    let mut response = body.respond(StatusCode::OK, conditional);
    let headers = response.headers_mut();
    // Public, for widgets on other origins, as Statuspage serves it.
    headers.insert(
        axum::http::header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Document `index` of what is published now: made once per change of what it shows, then
/// served as it is.
pub(super) async fn serve(
    state: &StatusPageState,
    index: usize,
    conditional: &Conditional,
) -> Response {
    let published = state.published().await;
    respond(&made(state, &published, index), conditional)
}

/// Document `index` of `published`, made the first time it is asked.
pub(super) fn made(state: &StatusPageState, published: &super::Published, index: usize) -> Body {
    published.document(index, |snapshot| {
        let r = Render::new(state, snapshot);
        let bytes = if index == crate::widget::WIDGET {
            crate::widget::document(&r)
        } else {
            document(index, &r)
        };
        Body::new(bytes, JSON)
    })
}

/// A Statuspage v2 document as one hand-written service, as the probes are: while what is
/// published holds, the answer is made on the spot from the body made of it (no extractor,
/// no boxed handler future); else the handler's way, which publishes anew.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    state: Arc<StatusPageState>,
    index: usize,
}

impl Document {
    pub(crate) fn new(state: Arc<StatusPageState>, index: usize) -> Self {
        Self { state, index }
    }
}

impl<B> tower::Service<axum::http::Request<B>> for Document {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures::future::Either<
        std::future::Ready<Result<Response, Self::Error>>,
        futures::future::BoxFuture<'static, Result<Response, Self::Error>>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        let conditional = Conditional::from_headers(request.headers());
        if let Some(published) = self.state.published_now() {
            let body = made(&self.state, &published, self.index);
            return futures::future::Either::Left(std::future::ready(Ok(respond(
                &body,
                &conditional,
            ))));
        }
        let (state, index) = (Arc::clone(&self.state), self.index);
        futures::future::Either::Right(Box::pin(async move {
            Ok(serve(&state, index, &conditional).await)
        }))
    }
}

/// Declares a Statuspage route's OpenAPI entry, on a handler that answers as the route's
/// [`Document`] does (the route is served by the service, which skips the extractors).
macro_rules! v2 {
    ($(#[$doc:meta])* $name:ident, $index:literal, $path:literal, $body:ty) => {
        $(#[$doc])*
        #[cfg(feature = "openapi")]
        #[allow(dead_code)]
        #[utoipa::path(get, path = $path, tag = "status page",
            responses(
                (status = 200, description = "As Atlassian Statuspage's public API answers", body = $body),
                (status = "default", description = "A rejected request (400, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error)))]
        pub(crate) async fn $name(
            State(state): State<Arc<StatusPageState>>,
            conditional: Conditional,
        ) -> Response {
            serve(&state, $index, &conditional).await
        }
    };
}

v2!(
    /// GET `/api/v2/status.json`: the page's indicator.
    status, 0, "/api/v2/status.json", StatusDoc
);
v2!(
    /// GET `/api/v2/summary.json`: components, unresolved incidents, maintenances, status.
    summary, 1, "/api/v2/summary.json", SummaryDoc
);
v2!(
    /// GET `/api/v2/components.json`.
    components, 2, "/api/v2/components.json", ComponentsDoc
);
v2!(
    /// GET `/api/v2/incidents.json`: open incidents and those of the last 14 days.
    incidents, 3, "/api/v2/incidents.json", IncidentsDoc
);
v2!(
    /// GET `/api/v2/incidents/unresolved.json`.
    unresolved, 4, "/api/v2/incidents/unresolved.json", IncidentsDoc
);
v2!(
    /// GET `/api/v2/scheduled-maintenances.json`: maintenances announced, in force or ahead.
    maintenances, 5, "/api/v2/scheduled-maintenances.json", MaintenancesDoc
);
v2!(
    /// GET `/api/v2/scheduled-maintenances/upcoming.json`.
    upcoming, 6, "/api/v2/scheduled-maintenances/upcoming.json", MaintenancesDoc
);
v2!(
    /// GET `/api/v2/scheduled-maintenances/active.json`.
    active, 7, "/api/v2/scheduled-maintenances/active.json", MaintenancesDoc
);

v2!(
    /// GET `/status/widget.json`: what a widget shows (the page's word, its components,
    /// incidents not resolved, maintenances in progress or ahead), small.
    widget, 8, "/status/widget.json", crate::widget::WidgetDoc
);

/// The paths of the documents, by index.
pub(crate) const PATHS: [&str; super::DOCUMENTS] = [
    "/api/v2/status.json",
    "/api/v2/summary.json",
    "/api/v2/components.json",
    "/api/v2/incidents.json",
    "/api/v2/incidents/unresolved.json",
    "/api/v2/scheduled-maintenances.json",
    "/api/v2/scheduled-maintenances/upcoming.json",
    "/api/v2/scheduled-maintenances/active.json",
    "/status/widget.json",
];
