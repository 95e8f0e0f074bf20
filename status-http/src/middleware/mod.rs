//! Tower middleware: shed requests during an outage, put routes behind features, refuse
//! oversized requests and answer every error in JSON.

pub mod feature_gate;
pub mod future;
pub mod health_gate;
pub mod request_guard;

pub use self::feature_gate::{FeatureGate, FeatureGateLayer};
pub use self::health_gate::{HealthGate, HealthGateLayer};
pub use self::request_guard::{RequestGuard, RequestGuardLayer};

use std::time::Duration;

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::ApiError;

/// The header a fail-open [`HealthGate`] adds to the responses it lets through during an
/// outage: `x-status-condition: OUTAGE`.
pub const X_STATUS_CONDITION: HeaderName = HeaderName::from_static("x-status-condition");

/// The default `Retry-After` of a rejection: 10 seconds.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(10);

/// A 503 with `Retry-After` and a JSON error.
fn unavailable(message: String, retry_after: Duration) -> Response {
    let mut response =
        ApiError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    let seconds = retry_after.as_secs().max(1);
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(seconds));
    response
}
