//! Bearer-token authentication of admin calls, compared in constant time.

use std::fmt;
use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::HeaderMap;
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// An admin bearer token, for applications that guard routes of their own the way the admin
/// API is guarded. Its `Debug` never shows it.
///
/// # Example
///
/// ```
/// use axum::http::{header::AUTHORIZATION, HeaderMap, StatusCode};
/// use status_http_core::auth::AdminToken;
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
            .and_then(status_core::text::bearer);
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

/// Who may call admin routes: the configured [`AdminToken`], or nobody (every admin call
/// then answers 403). Put it in your router's state and implement [`FromRef`] for it, and
/// the [`Admin`] extractor guards your own routes exactly as the admin API is guarded.
#[derive(Debug, Clone, Default)]
pub struct AdminAuth {
    token: Option<AdminToken>,
}

impl AdminAuth {
    /// Admin calls carrying `token`; a blank token turns them all away with 403.
    #[must_use]
    pub fn new(token: &str) -> Self {
        Self {
            token: AdminToken::new(token),
        }
    }

    /// Checks `headers`.
    ///
    /// # Errors
    ///
    /// 403 when no token is configured; 401 (with `WWW-Authenticate: Bearer`) when the
    /// token is missing or wrong.
    pub fn authorize(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        match &self.token {
            Some(token) => token.authorize(headers),
            None => Err(ApiError::admin_disabled()),
        }
    }
}

/// Proof that the request carries the admin token. Put it first among a handler's
/// arguments, so that nothing else of the request is looked at (not even the path) before
/// the caller is authenticated.
///
/// # Example
///
/// ```
/// use axum::extract::FromRef;
/// use axum::{routing::post, Router};
/// use status_http_core::auth::{Admin, AdminAuth};
///
/// #[derive(Clone)]
/// struct AppState {
///     auth: AdminAuth,
/// }
///
/// impl FromRef<AppState> for AdminAuth {
///     fn from_ref(state: &AppState) -> Self {
///         state.auth.clone()
///     }
/// }
///
/// async fn purge(_: Admin) -> &'static str {
///     "purged"
/// }
///
/// let app: Router = Router::new()
///     .route("/purge", post(purge))
///     .with_state(AppState { auth: AdminAuth::new("s3cret") });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Admin;

impl<S> FromRequestParts<S> for Admin
where
    S: Send + Sync,
    AdminAuth: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        AdminAuth::from_ref(state)
            .authorize(&parts.headers)
            .map(|()| Admin)
    }
}
