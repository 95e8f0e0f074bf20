//! Probe bodies serialized once per report generation and served as shared bytes, each with
//! a strong `ETag`; a matching `If-None-Match` is answered 304 without a body.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock, RwLock};

use axum::body::Bytes;
use axum::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use status_core::{DrainState, SystemReport};

use crate::error::ApiError;

/// A serialized body and its entity tag.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    bytes: Bytes,
    etag: HeaderValue,
    content_type: &'static str,
}

impl Body {
    pub(crate) fn new(bytes: impl Into<Bytes>, content_type: &'static str) -> Self {
        let bytes = bytes.into();
        let mut hasher = std::hash::DefaultHasher::new();
        bytes.hash(&mut hasher);
        let etag = HeaderValue::try_from(format!("\"{:016x}\"", hasher.finish()))
            .expect("hex digits in quotes are a valid header value");
        Self {
            bytes,
            etag,
            content_type,
        }
    }

    pub(crate) fn json<T: Serialize>(
        value: &T,
        content_type: &'static str,
    ) -> Result<Self, ApiError> {
        serde_json::to_vec(value)
            .map(|bytes| Self::new(bytes, content_type))
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    }

    /// The answer: 304 when `request` already holds this body, else `status` with it.
    pub(crate) fn respond(&self, status: StatusCode, request: &HeaderMap) -> Response {
        let cached = request
            .get_all(IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .any(|tag| tag == "*" || tag.as_bytes() == self.etag.as_bytes());
        if cached {
            return (StatusCode::NOT_MODIFIED, [(ETAG, self.etag.clone())]).into_response();
        }
        (
            status,
            [
                (CONTENT_TYPE, HeaderValue::from_static(self.content_type)),
                (ETAG, self.etag.clone()),
            ],
            self.bytes.clone(),
        )
            .into_response()
    }
}

/// The bodies of one report generation, each serialized on first use.
#[derive(Debug)]
pub(crate) struct Rendered {
    /// The registry's report it was made from.
    source: Arc<SystemReport>,
    /// That report as this router presents it.
    pub(crate) report: Arc<SystemReport>,
    /// The holds in force when it was made.
    pub(crate) drain: Option<DrainState>,
    rotation: u64,
    pub(crate) detailed: [OnceLock<Result<Body, ApiError>>; 3],
    pub(crate) summary: [OnceLock<Result<Body, ApiError>>; 3],
}

/// The latest [`Rendered`], shared by every request.
#[derive(Debug, Default)]
pub(crate) struct RenderCache {
    latest: RwLock<Option<Arc<Rendered>>>,
}

impl RenderCache {
    /// The bodies of the registry's `report` under rotation generation `rotation`: the
    /// cached ones when they match, else a new empty set (rendered lazily) of the report as
    /// `present` shows it. Never waits on a render.
    pub(crate) fn get(
        &self,
        report: Arc<SystemReport>,
        rotation: u64,
        present: impl FnOnce(Arc<SystemReport>) -> (Arc<SystemReport>, Option<DrainState>),
    ) -> Arc<Rendered> {
        let latest = self
            .latest
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(latest) =
            latest.filter(|l| Arc::ptr_eq(&l.source, &report) && l.rotation == rotation)
        {
            return latest;
        }
        let (presented, drain) = present(Arc::clone(&report));
        let fresh = Arc::new(Rendered {
            source: report,
            report: presented,
            drain,
            rotation,
            detailed: Default::default(),
            summary: Default::default(),
        });
        *self
            .latest
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&fresh));
        fresh
    }
}
