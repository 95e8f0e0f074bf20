//! Admin request bodies: bounded, JSON, validated before anything changes.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A request body that did not arrive whole within the server's body timeout (see
/// `serve`, feature `serve`).
///
/// Handlers that read bodies see it as the source of their extractor's error;
/// [`crate::error::ApiError`]'s conversions answer it with 408.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimeout;

impl std::fmt::Display for BodyTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for BodyTimeout {}

/// For an optional field of a request body, `#[serde(default, deserialize_with =
/// "status_http_core::body::present")]`: it may be left out, not given as `null` (as the OpenAPI
/// description says: such fields are not nullable), so that a `null` is refused with the
/// field named rather than read as absent.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// The largest admin request body accepted: 16 KiB.
pub const BODY_LIMIT: usize = 16 * 1024;

/// A request body read up to [`BODY_LIMIT`], parsed only when the handler asks (after it has
/// checked that the named resource exists).
#[derive(Debug)]
pub struct AdminBody(Bytes);

impl<S: Send + Sync> FromRequest<S> for AdminBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(Self(bytes)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::too_large(BODY_LIMIT))
            }
            Err(rejection) if timed_out(&rejection) => Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                BodyTimeout.to_string(),
            )),
            Err(rejection) => Err(ApiError::bad_request(rejection.body_text())),
        }
    }
}

/// Whether `error` comes of the server's body timeout.
fn timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<BodyTimeout>() {
            return true;
        }
        cause = error.source();
    }
    false
}

impl AdminBody {
    /// The body as `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        if self.0.iter().all(u8::is_ascii_whitespace) {
            return Err(ApiError::bad_request("a JSON body is required"));
        }
        serde_json::from_slice(&self.0)
            .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
    }
}
