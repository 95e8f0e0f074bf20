//! Bodies serialized once and served as shared bytes, each with a strong `ETag`; a matching `If-None-Match` is answered 304 without a body. A body of a
//! kilobyte or more goes compressed to a client that accepts it (zstd, else gzip), compressed
//! once per body and never waited for: while one request compresses, the others get the
//! body as it is.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use axum::extract::FromRequestParts;
use axum::http::header::{
    ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH, VARY,
};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use serde::Serialize;

use crate::error::ApiError;

/// Bodies smaller than this go as they are: compressing them saves less than it costs.
const COMPRESS_FROM: usize = 1024;

/// A content coding the probes can answer in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Zstd,
    Gzip,
}

impl Coding {
    /// Every coding, the preferred first when a client weighs them the same: zstd makes the
    /// detailed report at 1,000 dependencies about half the size gzip does.
    const ALL: [Coding; 2] = [Coding::Zstd, Coding::Gzip];

    fn name(self) -> &'static str {
        match self {
            Coding::Zstd => "zstd",
            Coding::Gzip => "gzip",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// `bytes` in this coding. Both run at their default level (zstd 3, gzip 6): a body is
    /// compressed once and served many times.
    fn encode(self, bytes: &[u8]) -> Option<Vec<u8>> {
        #[cfg(not(feature = "compression"))]
        {
            let _ = bytes;
            None
        }
        #[cfg(feature = "compression")]
        match self {
            Coding::Zstd => zstd::bulk::compress(bytes, zstd::DEFAULT_COMPRESSION_LEVEL).ok(),
            Coding::Gzip => {
                use std::io::Write as _;
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(bytes.len() / 8),
                    flate2::Compression::default(),
                );
                encoder.write_all(bytes).ok()?;
                encoder.finish().ok()
            }
        }
    }
}

/// What a probe's answer takes from the request's headers: the entity tags the client holds
/// and the codings it accepts. Extracted instead of the whole `HeaderMap`, which axum would
/// clone per request; a header the request lacks costs nothing.
#[derive(Debug, Default)]
pub struct Conditional {
    if_none_match: Vec<HeaderValue>,
    accept_encoding: Vec<HeaderValue>,
}

impl<S: Send + Sync> FromRequestParts<S> for Conditional {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::from_headers(&parts.headers))
    }
}

impl Conditional {
    /// The validators and codings `headers` carry.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        Self {
            if_none_match: headers.get_all(IF_NONE_MATCH).iter().cloned().collect(),
            accept_encoding: headers.get_all(ACCEPT_ENCODING).iter().cloned().collect(),
        }
    }
}

/// A serialized body and its entity tag, and its compressed forms once clients asked.
#[derive(Debug, Clone)]
pub struct Body {
    bytes: Bytes,
    etag: HeaderValue,
    content_type: &'static str,
    encoded: Arc<Encodings>,
}

/// The compressed forms of one body, each made at most once.
#[derive(Debug, Default)]
struct Encodings {
    /// Per [`Coding`]: the form, or none when it would not be smaller.
    forms: [OnceLock<Option<Encoded>>; Coding::ALL.len()],
    /// Per [`Coding`]: whether a request has started making the form.
    started: [AtomicBool; Coding::ALL.len()],
}

/// A compressed form of a body, with its own entity tag (a strong tag names one
/// representation).
#[derive(Debug)]
struct Encoded {
    coding: Coding,
    bytes: Bytes,
    etag: HeaderValue,
}

impl Body {
    /// `bytes` of `content_type`, tagged with a hash of them.
    pub fn new(bytes: impl Into<Bytes>, content_type: &'static str) -> Self {
        let bytes = bytes.into();
        let mut hasher = std::hash::DefaultHasher::new();
        bytes.hash(&mut hasher);
        let etag = HeaderValue::try_from(format!("\"{:016x}\"", hasher.finish()))
            .expect("hex digits in quotes are a valid header value");
        Self {
            bytes,
            etag,
            content_type,
            encoded: Arc::default(),
        }
    }

    /// The form to answer a client accepting `accepted` (best first): the best one, made now
    /// if it is not yet. While another request is making it, the next one already made, or
    /// none (the body goes as it is) rather than make a probe wait on a compression.
    fn encoded(&self, accepted: &[Coding]) -> Option<&Encoded> {
        let (&best, rest) = accepted.split_first()?;
        let i = best.index();
        if let Some(form) = self.encoded.forms[i].get() {
            return form.as_ref();
        }
        if self.encoded.started[i].swap(true, Ordering::AcqRel) {
            return rest
                .iter()
                .find_map(|c| self.encoded.forms[c.index()].get()?.as_ref());
        }
        self.encoded.forms[i]
            .get_or_init(|| {
                let compressed = best.encode(&self.bytes)?;
                if compressed.len() >= self.bytes.len() {
                    return None;
                }
                let tag = self.etag.to_str().ok()?.trim_end_matches('"');
                Some(Encoded {
                    coding: best,
                    bytes: Bytes::from(compressed),
                    etag: HeaderValue::try_from(format!("{tag}-{}\"", best.name())).ok()?,
                })
            })
            .as_ref()
    }

    /// `value` as JSON of `content_type`; a 500 when it does not serialize.
    pub fn json<T: Serialize>(value: &T, content_type: &'static str) -> Result<Self, ApiError> {
        serde_json::to_vec(value)
            .map(|bytes| Self::new(bytes, content_type))
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    }

    /// The answer: 304 when `status` is a 2xx and `request` already holds this body (a
    /// precondition applies to a success only), else `status` with it, compressed when the
    /// request accepts a coding and the body is large enough to gain.
    pub fn respond(&self, status: StatusCode, request: &Conditional) -> Response {
        let compressible = cfg!(feature = "compression") && self.bytes.len() >= COMPRESS_FROM;
        let encoded = if compressible {
            self.encoded(&accepted_codings(&request.accept_encoding))
        } else {
            None
        };
        let (bytes, etag) = match encoded {
            Some(e) => (&e.bytes, &e.etag),
            None => (&self.bytes, &self.etag),
        };
        // Preconditions apply to a 2xx answer only (RFC 9110 §13.2.1): a failing probe
        // answered 304 would read as "up" to balancers that count 3xx as success.
        let cached = status.is_success()
            && request
                .if_none_match
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
                .any(|tag| tag == "*" || tag.as_bytes() == etag.as_bytes());
        // Built by hand: the tuple form would insert a content type for the bytes and then
        // replace it, on the hottest path of the library.
        let mut response = if cached {
            let mut response = Response::new(axum::body::Body::empty());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            response
        } else {
            let mut response = Response::new(axum::body::Body::from(bytes.clone()));
            *response.status_mut() = status;
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(self.content_type));
            response
        };
        let headers = response.headers_mut();
        headers.insert(ETAG, etag.clone());
        if compressible {
            headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
        }
        if let Some(e) = encoded.filter(|_| !cached) {
            headers.insert(CONTENT_ENCODING, HeaderValue::from_static(e.coding.name()));
        }
        response
    }
}

/// The codings `request` accepts, best first (RFC 9110 §12.5.3): its highest `q`, and on
/// a tie zstd before gzip. A coding named with `q=0` is refused; `*` stands for the codings
/// not named. No `Accept-Encoding` at all means none.
fn accepted_codings(accept_encoding: &[HeaderValue]) -> Vec<Coding> {
    let mut named: [Option<f32>; Coding::ALL.len()] = [None; Coding::ALL.len()];
    let mut any: Option<f32> = None;
    let entries = accept_encoding
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','));
    for entry in entries {
        let mut parts = entry.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let q = parts
            .find_map(|p| {
                let (key, value) = p.split_once('=')?;
                key.trim()
                    .eq_ignore_ascii_case("q")
                    .then(|| value.trim().parse::<f32>().ok())?
            })
            .unwrap_or(1.0);
        if name == "*" {
            any = Some(q);
        } else if let Some(c) = Coding::ALL
            .into_iter()
            .find(|c| name.eq_ignore_ascii_case(c.name()))
        {
            named[c.index()] = Some(q);
        }
    }
    let mut accepted: Vec<(Coding, f32)> = Coding::ALL
        .into_iter()
        .filter_map(|c| Some((c, named[c.index()].or(any)?)))
        .filter(|(_, q)| *q > 0.0)
        .collect();
    // A stable sort keeps the preference order among equal weights.
    accepted.sort_by(|a, b| b.1.total_cmp(&a.1));
    accepted.into_iter().map(|(c, _)| c).collect()
}

#[cfg(all(test, feature = "compression"))]
mod tests {
    use super::*;

    fn large() -> Body {
        let json: String = (0..200)
            .map(|i| format!("{{\"id\":\"dep-{i}\",\"status\":\"OK\"}},"))
            .collect();
        Body::new(json, crate::respond::JSON)
    }

    #[test]
    fn a_probe_never_waits_for_another_requests_compression() {
        let body = large();
        // Another request has started the zstd form and not finished it.
        body.encoded.started[Coding::Zstd.index()].store(true, Ordering::Release);
        assert!(
            body.encoded(&[Coding::Zstd, Coding::Gzip]).is_none(),
            "the body goes as it is"
        );
        // Once a form is made, a client taking either gets the one that is ready.
        let gzip = body.encoded(&[Coding::Gzip]).expect("gzip is made");
        assert_eq!(gzip.coding, Coding::Gzip);
        let ready = body.encoded(&[Coding::Zstd, Coding::Gzip]).unwrap();
        assert_eq!(ready.coding, Coding::Gzip, "the ready form, not a wait");
    }

    #[test]
    fn each_form_is_made_once() {
        let body = large();
        let first = body.encoded(&[Coding::Zstd]).unwrap() as *const Encoded;
        let second = body.encoded(&[Coding::Zstd]).unwrap() as *const Encoded;
        assert_eq!(first, second);
        assert!(body.encoded(&[Coding::Zstd]).unwrap().bytes.len() < body.bytes.len());
    }

    #[test]
    fn a_body_that_does_not_shrink_goes_as_it_is() {
        let mut x = 1u64;
        let noise: Vec<u8> = (0..4096)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        let body = Body::new(noise, "application/octet-stream");
        assert!(body.encoded(&[Coding::Zstd]).is_none());
        assert!(body.encoded(&[Coding::Gzip]).is_none());
    }
}
