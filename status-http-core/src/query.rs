//! Query strings, read one way: every route's through axum's `Query<T>` ([`Params`], a 400
//! with a JSON error when it is not one).

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// A route's query string as `T`, through axum's [`Query`]; one that is not a `T` (a name
/// `T` denies, one given twice, a value of the wrong type) is a 400 with a JSON error, and
/// the handler never runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::try_from_uri(&parts.uri)
            .map(|Query(params)| Self(params))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// The number a query's `name` gives, `value`, from `min` to `max` (`default` when not
/// given); a 400 otherwise.
pub fn number<T>(name: &str, value: Option<&str>, default: T, min: T, max: T) -> Result<T, ApiError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    match value {
        None => Ok(default),
        Some(v) => v
            .parse::<T>()
            .ok()
            .filter(|n| *n >= min && *n <= max)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{name} must be an integer from {min} to {max}, not {v:?}"
                ))
            }),
    }
}

/// The id a path segment `text` names (`what`: "an incident"), a positive integer; a 400
/// saying so when it is not one.
///
/// # Errors
///
/// The 400 for anything but a positive integer.
pub fn positive_id(what: &str, text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            ApiError::bad_request(format!("{text:?} is not {what} id (a positive integer)"))
        })
}
