//! Probe bodies serialized once per report generation and served as shared bytes, each with
//! a strong `ETag`; a matching `If-None-Match` is answered 304 without a body. A body of a
//! kilobyte or more goes gzip-compressed to a client that accepts it, compressed once.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock, RwLock};

use axum::body::Bytes;
use axum::http::header::{
    ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use status_core::{DrainState, SystemReport};

use crate::error::ApiError;

/// Bodies smaller than this go as they are: compressing them saves less than it costs.
const COMPRESS_FROM: usize = 1024;

/// A serialized body and its entity tag, and its gzip form once a client asked for it.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    bytes: Bytes,
    etag: HeaderValue,
    content_type: &'static str,
    gzip: Arc<OnceLock<Option<Encoded>>>,
}

/// A compressed form of a body, with its own entity tag (a strong tag names one
/// representation).
#[derive(Debug)]
struct Encoded {
    bytes: Bytes,
    etag: HeaderValue,
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
            gzip: Arc::default(),
        }
    }

    /// The gzip form, made on first use; none when it would not be smaller.
    fn gzip(&self) -> Option<&Encoded> {
        self.gzip
            .get_or_init(|| {
                use std::io::Write as _;
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(self.bytes.len() / 8),
                    flate2::Compression::fast(),
                );
                encoder.write_all(&self.bytes).ok()?;
                let compressed = encoder.finish().ok()?;
                if compressed.len() >= self.bytes.len() {
                    return None;
                }
                let tag = self.etag.to_str().ok()?.trim_end_matches('"');
                Some(Encoded {
                    bytes: Bytes::from(compressed),
                    etag: HeaderValue::try_from(format!("{tag}-gzip\"")).ok()?,
                })
            })
            .as_ref()
    }

    pub(crate) fn json<T: Serialize>(
        value: &T,
        content_type: &'static str,
    ) -> Result<Self, ApiError> {
        serde_json::to_vec(value)
            .map(|bytes| Self::new(bytes, content_type))
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    }

    /// The answer: 304 when `request` already holds this body, else `status` with it, gzipped
    /// when the request accepts it and the body is large enough to gain.
    pub(crate) fn respond(&self, status: StatusCode, request: &HeaderMap) -> Response {
        let compressible = self.bytes.len() >= COMPRESS_FROM;
        let encoded = if compressible && accepts_gzip(request) {
            self.gzip()
        } else {
            None
        };
        let (bytes, etag) = match encoded {
            Some(e) => (&e.bytes, &e.etag),
            None => (&self.bytes, &self.etag),
        };
        let cached = request
            .get_all(IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .any(|tag| tag == "*" || tag.as_bytes() == etag.as_bytes());
        let mut response = if cached {
            (StatusCode::NOT_MODIFIED, [(ETAG, etag.clone())]).into_response()
        } else {
            (
                status,
                [
                    (CONTENT_TYPE, HeaderValue::from_static(self.content_type)),
                    (ETAG, etag.clone()),
                ],
                bytes.clone(),
            )
                .into_response()
        };
        let headers = response.headers_mut();
        if compressible {
            headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
        }
        if encoded.is_some() && !cached {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        }
        response
    }
}

/// Whether `request` accepts gzip: a `gzip` (or `*`) coding without `q=0`.
fn accepts_gzip(request: &HeaderMap) -> bool {
    request
        .get_all(ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
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
