//! The rejections of the HTTP API: each carries its status and a JSON `{"error": …}` body.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// A rejected request: a status code and a message, answered as `{"error": message}`.
///
/// Nothing about the process changes on a rejected call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// A rejection with `status` and `message`.
    #[must_use]
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// 400: the request is malformed.
    #[must_use]
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401: credentials are missing or wrong (answered with `WWW-Authenticate: Bearer`).
    #[must_use]
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "missing or invalid bearer token")
    }

    /// 403: the admin API is off because no admin token is configured.
    #[must_use]
    pub fn admin_disabled() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "the admin API is disabled: no admin token is configured",
        )
    }

    /// 404: no such dependency or feature.
    #[must_use]
    pub fn not_found(what: &str, name: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("no {what} named {name:?}"))
    }

    /// 413: the body is larger than the limit.
    #[must_use]
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body larger than {limit} bytes"),
        )
    }

    /// The status code.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({ "error": self.message }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"status\""),
            );
        }
        response
    }
}

/// A core error as an answer: an unknown name is 404, an invalid value (a bad id, a blank
/// reason, a TTL out of range) 400, a name already taken 409, anything else 500.
impl From<status_core::Error> for ApiError {
    fn from(error: status_core::Error) -> Self {
        let status = if error.is_not_found() {
            StatusCode::NOT_FOUND
        } else if error.is_invalid() || error.is_invalid_id() {
            StatusCode::BAD_REQUEST
        } else if error.is_duplicate() || error.is_conflict() {
            StatusCode::CONFLICT
        } else if error.is_unavailable() {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        Self::new(status, error.to_string())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for ApiError {}

/// What a handler that panicked answers: a JSON 500 that says nothing of the panic (it is
/// logged), instead of a connection closed without an answer. A bug in one handler then
/// costs one request, never a probe's connection.
#[allow(clippy::needless_pass_by_value)] // the signature tower-http's `ResponseForPanic` takes
pub fn panicked(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("a panic without a message");
    tracing::error!(panic = what, "a handler panicked; answered 500");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response()
}

#[cfg(test)]
mod panic_tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::get;
    use axum::Router;
    use tower::ServiceExt;
    use tower_http::catch_panic::CatchPanicLayer;

    #[tokio::test]
    async fn a_handler_that_panics_answers_a_json_500_that_leaks_nothing() {
        let app = Router::new()
            .route(
                "/boom",
                get(|| async {
                    panic!("secret detail");
                    #[allow(unreachable_code)]
                    ""
                }),
            )
            .layer(CatchPanicLayer::custom(super::panicked));
        let response = app
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&body[..], br#"{"error":"internal error"}"#);
    }
}
