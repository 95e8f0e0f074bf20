//! Refuses what no route accepts before any handler runs, and makes every error answer JSON.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use pin_project_lite::pin_project;
use tower::{Layer, Service};

use crate::{ApiError, BODY_LIMIT};

/// The longest request target accepted: 8 KiB. Longer ones answer 414.
pub const MAX_URI: usize = 8 * 1024;

/// The most header bytes (names and values) accepted: 32 KiB. More answer 431.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The largest plain-text error body rewritten as JSON; a larger one is summed up by its
/// status.
const MAX_TEXT_ERROR: usize = 4 * 1024;

/// Layer of [`RequestGuard`]; [`Routes`](crate::Routes) applies it to its routes. Apply it
/// once more around a whole application to give its own routes, and its 404 for unknown
/// paths, the same answers.
///
/// # Example
///
/// ```
/// use axum::routing::get;
/// use status_http::middleware::RequestGuardLayer;
///
/// let app: axum::Router = axum::Router::new()
///     .route("/hello", get(|| async { "hello" }))
///     .merge(status_http::routes(&status_core::Registry::new()))
///     .layer(RequestGuardLayer::new());
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequestGuardLayer {
    /// Paths whose bodies have a limit of their own, and that limit.
    body_limits: Vec<(String, usize)>,
}

impl RequestGuardLayer {
    /// The layer.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            body_limits: Vec::new(),
        }
    }

    /// Bodies sent to exactly `path` may declare up to `limit` bytes instead of
    /// [`BODY_LIMIT`]: a route that reads and bounds its own body (status-mcp's `/mcp`, 64
    /// KiB by default).
    #[must_use]
    pub fn body_limit_at(mut self, path: impl Into<String>, limit: usize) -> Self {
        self.body_limits.push((path.into(), limit));
        self
    }
}

impl<S> Layer<S> for RequestGuardLayer {
    type Service = RequestGuard<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestGuard {
            inner,
            body_limits: Arc::from(self.body_limits.clone()),
        }
    }
}

/// Answers at once, without reading a byte of the body, a request whose declared
/// `Content-Length` exceeds [`BODY_LIMIT`] (or the limit
/// [`body_limit_at`](RequestGuardLayer::body_limit_at) gives its path; 413), whose target exceeds [`MAX_URI`] (414) or
/// whose headers exceed [`MAX_HEADER_BYTES`] (431). Rewrites as `{"error": …}` the error
/// answers that are not JSON: empty ones (axum's 404 and 405) and plain-text 4xx (axum's
/// rejections of a bad path or query), keeping their status and headers (`Allow` on a 405).
/// A plain-text 5xx is left alone: it is a probe's `?verbose` answer.
#[derive(Debug, Clone)]
pub struct RequestGuard<S> {
    inner: S,
    body_limits: Arc<[(String, usize)]>,
}

impl<S> RequestGuard<S> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The wrapped service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S> Service<Request> for RequestGuard<S>
where
    S: Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let limit = self
            .body_limits
            .iter()
            .find(|(path, _)| request.uri().path() == path)
            .map_or(BODY_LIMIT, |(_, limit)| *limit);
        if let Some(refused) = refuse(&request, limit) {
            return ResponseFuture {
                state: State::Refused {
                    response: Some(refused.into_response()),
                },
            };
        }
        ResponseFuture {
            state: State::Inner {
                future: self.inner.call(request),
            },
        }
    }
}

pin_project! {
    /// The response of a [`RequestGuard`]: the inner service's, made JSON if it is an error
    /// that is not, or the guard's own refusal. Allocates only to rewrite an error.
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Refused { response: Option<Response> },
        Inner { #[pin] future: F },
        Rewriting { future: BoxFuture<'static, Response> },
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project().state.project() {
                StateProj::Refused { response } => {
                    return Poll::Ready(Ok(response
                        .take()
                        .expect("ResponseFuture polled after completion")));
                }
                StateProj::Inner { future } => {
                    let response = ready!(future.poll(cx))?;
                    let Some(text) = rewrite(&response) else {
                        return Poll::Ready(Ok(response));
                    };
                    self.as_mut().project().state.set(State::Rewriting {
                        future: Box::pin(as_json(response, text)),
                    });
                }
                StateProj::Rewriting { future } => {
                    return Poll::Ready(Ok(ready!(future.as_mut().poll(cx))));
                }
            }
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

fn refuse(request: &Request, body_limit: usize) -> Option<ApiError> {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > MAX_URI {
        return Some(ApiError::new(
            StatusCode::URI_TOO_LONG,
            format!("request target longer than {MAX_URI} bytes"),
        ));
    }
    if header_bytes(request.headers()) > MAX_HEADER_BYTES {
        return Some(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("request headers larger than {MAX_HEADER_BYTES} bytes"),
        ));
    }
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().parse::<u64>());
    match declared {
        Some(Ok(length)) if length > body_limit as u64 => Some(ApiError::too_large(body_limit)),
        Some(Err(_)) => Some(ApiError::bad_request("invalid content-length")),
        _ => None,
    }
}

fn header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum()
}

/// Whether `response` is an error to answer in JSON instead: `Some(false)` when its body is
/// empty, `Some(true)` when it is plain text worth keeping as the message.
fn rewrite(response: &Response) -> Option<bool> {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return None;
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if content_type.is_empty() {
        Some(false)
    } else if status.is_client_error() && content_type.starts_with("text/plain") {
        // A 5xx in plain text is a probe's verbose answer (503 on OUTAGE): meant as it is.
        Some(true)
    } else {
        None
    }
}

/// `response` as `{"error": …}`, with its text as the message if `text`, keeping its status
/// and headers.
async fn as_json(response: Response, text: bool) -> Response {
    let status = response.status();
    let (mut parts, body) = response.into_parts();
    let message = if text {
        match axum::body::to_bytes(body, MAX_TEXT_ERROR).await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
            Err(_) => String::new(),
        }
    } else {
        String::new()
    };
    let message = if message.is_empty() {
        default_message(status)
    } else {
        message
    };
    let json = ApiError::new(status, message).into_response();
    let (json_parts, json_body) = json.into_parts();
    parts.headers.remove(CONTENT_LENGTH);
    for (name, value) in &json_parts.headers {
        parts.headers.insert(name, value.clone());
    }
    Response::from_parts(parts, Body::new(json_body))
}

fn default_message(status: StatusCode) -> String {
    match status {
        StatusCode::NOT_FOUND => "no such route".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => "method not allowed on this route".to_owned(),
        _ => status
            .canonical_reason()
            .map_or_else(|| status.to_string(), str::to_lowercase),
    }
}
