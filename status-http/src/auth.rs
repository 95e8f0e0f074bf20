//! Bearer-token authentication of admin calls, compared in constant time.

use std::fmt;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// An admin bearer token, for applications that guard routes of their own the way the admin
/// API is guarded. Its `Debug` never shows it.
///
/// # Example
///
/// ```
/// use axum::http::{header::AUTHORIZATION, HeaderMap, StatusCode};
/// use status_http::AdminToken;
///
/// let token = AdminToken::new("s3cret").unwrap();
/// let mut headers = HeaderMap::new();
/// assert_eq!(token.authorize(&headers).unwrap_err().status(), StatusCode::UNAUTHORIZED);
/// headers.insert(AUTHORIZATION, "Bearer s3cret".parse().unwrap());
/// assert!(token.authorize(&headers).is_ok());
/// ```
#[derive(Clone)]
pub struct AdminToken(Arc<[u8]>);

impl AdminToken {
    /// The token, or `None` if it is blank.
    #[must_use]
    pub fn new(token: &str) -> Option<Self> {
        let token = token.trim();
        (!token.is_empty()).then(|| Self(Arc::from(token.as_bytes())))
    }

    /// Whether `headers` carry `Authorization: Bearer <this token>`.
    ///
    /// # Errors
    ///
    /// A 401 [`ApiError`] (answered with `WWW-Authenticate: Bearer`) when they do not.
    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, credentials) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| credentials.trim())
            });
        match presented {
            Some(candidate) if self.matches(candidate.as_bytes()) => Ok(()),
            _ => Err(ApiError::unauthorized()),
        }
    }

    /// Whether `candidate` is the token, in time that depends only on their lengths.
    fn matches(&self, candidate: &[u8]) -> bool {
        candidate.len() == self.0.len() && bool::from(candidate.ct_eq(&self.0))
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// Proof that the request carries the admin token. Extract it first in admin handlers so that
/// nothing else is looked at before the caller is authenticated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admin;

impl FromRequestParts<Arc<AppState>> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let Some(token) = &state.admin_token else {
            return Err(ApiError::admin_disabled());
        };
        token.authorize(&parts.headers).map(|()| Admin)
    }
}
