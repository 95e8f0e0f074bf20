//! Query strings, read one way: every route's through axum's `Query<T>` ([`Params`], a 400
//! with a JSON error when it is not one), and how a probe wants its answer (`?format=`,
//! `?verbose`, `?exclude=`, `?strict=`, `Accept`), read as pairs through the same `Query`.

use axum::extract::{FromRequestParts, Query};
use axum::http::header::ACCEPT;
use axum::http::request::Parts;

use crate::error::ApiError;
#[cfg(feature = "history")]
pub(crate) use status_http_core::query::number;
pub(crate) use status_http_core::query::Params;

/// The media type of the IETF health check response format.
pub(crate) const HEALTH_JSON: &str = "application/health+json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Format {
    Json,
    HealthJson,
    Verbose,
}

/// The most dependencies one request may leave out with `?exclude=`; more answer 400.
pub(crate) const MAX_EXCLUDED: usize = 256;

/// The longest name `?exclude=` takes; a longer one answers 400 (no dependency has one).
const MAX_EXCLUDED_NAME: usize = 256;

/// What a probe request asks for: its format, the dependencies it leaves out, strictness.
#[derive(Debug, Clone)]
pub(crate) struct ProbeQuery {
    pub(crate) format: Format,
    pub(crate) exclude: Vec<String>,
    pub(crate) strict: bool,
}

impl ProbeQuery {
    pub(crate) fn excluded(&self) -> Vec<&str> {
        self.exclude.iter().map(String::as_str).collect()
    }
}

fn flag(name: &str, value: &str) -> Result<bool, ApiError> {
    // Exactly the spellings `/openapi.json` documents; a bare `?strict` is true.
    match value {
        "" | "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not {value:?}"
        ))),
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ProbeQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Self::from_parts(parts)
    }
}

impl ProbeQuery {
    /// What `parts` ask for; a 400 for a malformed or unknown option.
    pub(crate) fn from_parts(parts: &Parts) -> Result<Self, ApiError> {
        // A probe from a balancer has no query string: nothing to parse.
        let pairs = match parts.uri.query() {
            None => Vec::new(),
            Some(_) => {
                Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
                    .map_err(|e| ApiError::bad_request(format!("malformed query string: {e}")))?
                    .0
            }
        };
        let accepts_health_json = parts
            .headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains(HEALTH_JSON));
        let mut view = ProbeQuery {
            format: if accepts_health_json {
                Format::HealthJson
            } else {
                Format::Json
            },
            exclude: Vec::new(),
            strict: false,
        };
        for (key, value) in pairs {
            match key.as_str() {
                // A `+` typed in a URL arrives as a space: accept both spellings.
                "format" => {
                    view.format = match value.to_ascii_lowercase().as_str() {
                        "json" => Format::Json,
                        "health+json" | "health json" | "health" => Format::HealthJson,
                        "text" | "verbose" => Format::Verbose,
                        _ => {
                            return Err(ApiError::bad_request(format!(
                                "unknown format {value:?}: use json, health+json or text"
                            )))
                        }
                    }
                }
                "verbose" if flag("verbose", &value)? => view.format = Format::Verbose,
                "strict" => view.strict = flag("strict", &value)?,
                "exclude" => {
                    for name in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        if name.len() > MAX_EXCLUDED_NAME {
                            return Err(ApiError::bad_request(format!(
                                "exclude: a name is at most {MAX_EXCLUDED_NAME} bytes"
                            )));
                        }
                        if view.exclude.len() == MAX_EXCLUDED {
                            return Err(ApiError::bad_request(format!(
                                "exclude: at most {MAX_EXCLUDED} names"
                            )));
                        }
                        view.exclude.push(name.to_owned());
                    }
                }
                _ => {} // cache busters and the like
            }
        }
        Ok(view)
    }
}
