//! The shapes every router's OpenAPI description shares.

use utoipa::ToSchema;

/// A rejected request.
#[derive(Debug, ToSchema)]
pub struct Error {
    /// What was wrong.
    #[allow(dead_code)] // described, never built: the answers are `ApiError`'s
    error: String,
}
