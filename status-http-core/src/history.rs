//! What every route over the history answers alike: the 404 of a router that keeps none, a
//! store's refusal as its code, and `?days=`.

use axum::http::StatusCode;
use status_history::History;

use crate::error::ApiError;

/// The history, or the 404 of a router that keeps none.
pub fn kept(history: Option<&History>) -> Result<&History, ApiError> {
    history.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "no history is kept here (see status_http::Routes::history)",
        )
    })
}

/// A read refused or failed: a window that is not one is a 400, a store not available a 503.
#[allow(clippy::needless_pass_by_value)] // `map_err(rejection)`
pub fn rejection(e: status_history::Error) -> ApiError {
    if e.is_invalid() {
        ApiError::bad_request(e.to_string())
    } else if e.is_conflict() {
        ApiError::new(StatusCode::CONFLICT, e.to_string())
    } else {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the history store is not available: {e}"),
        )
    }
}

/// A refusal about `what` `id` (an incident, a maintenance): a 404 naming it when there is
/// none, else as [`rejection`].
pub fn about(what: &'static str, id: i64) -> impl Fn(status_history::Error) -> ApiError {
    move |e| {
        if e.is_not_found() {
            ApiError::not_found(what, &id.to_string())
        } else {
            rejection(e)
        }
    }
}

/// `?days=`.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaysQuery {
    /// How many days back, as the client wrote it.
    pub days: Option<String>,
}
