//! Liveness, the summary, a group's summary and the detailed report, the probes a balancer
//! (or a monitor) calls many times a second, as one hand-written tower service.

use std::convert::Infallible;
use std::future::{ready, Ready};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::Request;
use axum::response::{IntoResponse, Response};

use super::{detailed_answer, groups, live_answer, summary_answer, ProbeState};
use crate::query::ProbeQuery;
use crate::render::Conditional;

/// The probes a balancer calls many times a second, liveness and the summary, as one
/// hand-written service: no extractor, no boxed handler future, the answer made on the spot
/// from the cached bodies.
#[derive(Debug, Clone)]
pub(crate) struct HotProbe {
    state: Arc<ProbeState>,
    route: Route,
}

#[derive(Debug, Clone, Copy)]
enum Route {
    /// `/healthcheck`: the detailed report.
    Detailed,
    Live,
    Summary,
    /// `/healthcheck/groups/{name}/summary`: the name is the path's next-to-last segment.
    GroupSummary,
}

impl HotProbe {
    pub(crate) fn detailed(state: Arc<ProbeState>) -> Self {
        Self {
            state,
            route: Route::Detailed,
        }
    }

    pub(crate) fn live(state: Arc<ProbeState>) -> Self {
        Self {
            state,
            route: Route::Live,
        }
    }

    pub(crate) fn summary(state: Arc<ProbeState>) -> Self {
        Self {
            state,
            route: Route::Summary,
        }
    }

    pub(crate) fn group_summary(state: Arc<ProbeState>) -> Self {
        Self {
            state,
            route: Route::GroupSummary,
        }
    }
}

impl<B> tower::Service<Request<B>> for HotProbe {
    type Response = Response;
    type Error = Infallible;
    type Future = Ready<Result<Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let (parts, _) = request.into_parts();
        let conditional = Conditional::from_headers(&parts.headers);
        let response = match (ProbeQuery::from_parts(&parts), self.route) {
            (Err(rejected), _) => rejected.into_response(),
            (Ok(query), Route::Detailed) => detailed_answer(&self.state, &query, &conditional)
                .unwrap_or_else(IntoResponse::into_response),
            (Ok(query), Route::Live) => live_answer(&self.state, &query, &conditional),
            (Ok(query), Route::Summary) => summary_answer(&self.state, &query, &conditional)
                .unwrap_or_else(IntoResponse::into_response),
            (Ok(query), Route::GroupSummary) => {
                // Group names need no decoding: any other spelling is no group's.
                let name = parts.uri.path().rsplit('/').nth(1).unwrap_or_default();
                groups::summary_answer(&self.state, name, &query, &conditional)
                    .unwrap_or_else(IntoResponse::into_response)
            }
        };
        ready(Ok(response))
    }
}
