//! Answers made on the spot: a JSON or text body with its code, for what is not cached.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;

/// The content type of every JSON answer.
pub const JSON: &str = "application/json";
/// The content type of every text answer.
pub const TEXT: &str = "text/plain; charset=utf-8";

/// A JSON body with a status code and a content type.
pub fn json_response<T: Serialize>(
    status: StatusCode,
    content_type: &'static str,
    body: &T,
) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static(content_type))],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// A plain-text body with a status code.
pub fn text_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        body,
    )
        .into_response()
}
