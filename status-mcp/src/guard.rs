//! The door of `/mcp`: a bearer token (admin or read-only) compared in constant time, a bound
//! on requests in flight, and the count of what was turned away.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

use crate::diagnose::Access;
use crate::tools::Server;

/// A bearer token; its `Debug` never shows it.
#[derive(Clone)]
pub(crate) struct Token(Arc<[u8]>);

impl Token {
    /// The token, or `None` if it is blank.
    pub(crate) fn new(token: &str) -> Option<Self> {
        let token = token.trim();
        (!token.is_empty()).then(|| Self(Arc::from(token.as_bytes())))
    }

    /// Whether `candidate` is the token, in time that depends only on their lengths.
    fn matches(&self, candidate: &[u8]) -> bool {
        candidate.len() == self.0.len() && bool::from(candidate.ct_eq(&self.0))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

/// What `/mcp` turned away and answered, since the start.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) answered: AtomicU64,
    pub(crate) unauthorized: AtomicU64,
    pub(crate) busy: AtomicU64,
}

/// The guarded MCP endpoint: a tower service answering at the path it is mounted on.
#[derive(Clone)]
pub struct McpService {
    pub(crate) inner: Arc<Guarded>,
}

impl McpService {
    /// The largest request body it reads, in bytes ([`Mcp::max_body_bytes`](crate::Mcp::max_body_bytes)):
    /// for a guard in front of it, whose own limit must not be smaller.
    #[must_use]
    pub fn max_body_bytes(&self) -> usize {
        self.inner.max_body
    }
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("admin_token", &self.inner.admin.is_some())
            .field("read_token", &self.inner.read.is_some())
            .field("admin_free", &self.inner.admin_permits.available_permits())
            .field("read_free", &self.inner.read_permits.available_permits())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Guarded {
    pub(crate) admin: Option<Token>,
    pub(crate) read: Option<Token>,
    /// The calls in flight, per token: the read-only token's callers cannot take the
    /// admin's places.
    pub(crate) admin_permits: Arc<Semaphore>,
    pub(crate) read_permits: Arc<Semaphore>,
    /// The largest body read, in bytes.
    pub(crate) max_body: usize,
    pub(crate) transport: StreamableHttpService<Server, NeverSessionManager>,
    pub(crate) counters: Arc<Counters>,
}

impl Guarded {
    /// Who `headers` say the caller is, if anyone.
    fn access(&self, headers: &HeaderMap) -> Option<Access> {
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(status_core::text::bearer)?
            .as_bytes();
        // Both compared, whichever matches, so the time says nothing of which one exists.
        let admin = self.admin.as_ref().is_some_and(|t| t.matches(presented));
        let read = self.read.as_ref().is_some_and(|t| t.matches(presented));
        if admin {
            Some(Access::Admin)
        } else if read {
            Some(Access::Read)
        } else {
            None
        }
    }

    async fn call(self: Arc<Self>, mut request: Request<Body>) -> Response<Body> {
        if self.admin.is_none() && self.read.is_none() {
            self.counters.unauthorized.fetch_add(1, Ordering::Relaxed);
            return refused(
                StatusCode::FORBIDDEN,
                "MCP is closed: no token is configured (set an admin or a read-only token)",
            );
        }
        let Some(access) = self.access(request.headers()) else {
            self.counters.unauthorized.fetch_add(1, Ordering::Relaxed);
            let mut answer = refused(
                StatusCode::UNAUTHORIZED,
                "a bearer token is required: Authorization: Bearer <token>",
            );
            answer.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcp\""),
            );
            return answer;
        };
        // Places per token: the read-only token's callers never take the admin's; a body
        // holds its place at most the body's deadline.
        let permits = match access {
            Access::Admin => &self.admin_permits,
            Access::Read => &self.read_permits,
        };
        let Ok(_permit) = Arc::clone(permits).try_acquire_owned() else {
            self.counters.busy.fetch_add(1, Ordering::Relaxed);
            let mut answer = refused(
                StatusCode::TOO_MANY_REQUESTS,
                "too many MCP requests in flight; retry in a second",
            );
            answer
                .headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            return answer;
        };
        request.extensions_mut().insert(access);
        let request = match self.read_body(request).await {
            Ok(request) => request,
            Err(refusal) => return *refusal,
        };
        let answer = self.transport.handle(request).await;
        self.counters.answered.fetch_add(1, Ordering::Relaxed);
        answer.map(Body::new)
    }
}

impl Guarded {
    /// A POST's body read whole (at most `max_body` bytes: 413 beyond) and parsed once: what
    /// is not JSON is answered with JSON-RPC's parse error (-32700), JSON that is not a
    /// JSON-RPC message with its invalid request (-32600), both with 400 and nothing done.
    async fn read_body(
        &self,
        request: Request<Body>,
    ) -> Result<Request<Body>, Box<Response<Body>>> {
        if request.method() != axum::http::Method::POST {
            return Ok(request);
        }
        let (parts, body) = request.into_parts();
        let read = tokio::time::timeout(BODY_DEADLINE, axum::body::to_bytes(body, self.max_body));
        let Ok(read) = read.await else {
            return Err(Box::new(refused(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the body did not arrive within {} s",
                    BODY_DEADLINE.as_secs()
                ),
            )));
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) if is_too_large(&e) => {
                return Err(Box::new(refused(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("the body is larger than {} bytes", self.max_body),
                )));
            }
            Err(e) => {
                return Err(Box::new(refused(
                    StatusCode::BAD_REQUEST,
                    &format!("the body could not be read: {e}"),
                )))
            }
        };
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Err(e) => Err(Box::new(rpc_error(-32700, &format!("Parse error: {e}")))),
            Ok(serde_json::Value::Object(message))
                if message.get("jsonrpc").and_then(serde_json::Value::as_str) == Some("2.0") =>
            {
                // JSON-RPC's ids are strings, numbers or null: another is an invalid request,
                // said as JSON-RPC says it (not the transport's 415).
                if message
                    .get("id")
                    .is_some_and(|id| !(id.is_string() || id.is_number() || id.is_null()))
                {
                    return Err(Box::new(rpc_error(
                        -32600,
                        "Invalid Request: an id is a string, a number or null",
                    )));
                }
                Ok(Request::from_parts(parts, Body::from(bytes)))
            }
            Ok(_) => Err(Box::new(rpc_error(
                -32600,
                "Invalid Request: a JSON-RPC 2.0 message is an object with \"jsonrpc\": \"2.0\"",
            ))),
        }
    }
}

/// The longest a call's body may take to arrive whole.
const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether reading a body failed for its length.
fn is_too_large(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = source {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// A JSON-RPC error answering a message that could not be read (its id unknown: null), 400.
fn rpc_error(code: i64, message: &str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    })
    .to_string();
    let mut answer = Response::new(Body::from(body));
    *answer.status_mut() = StatusCode::BAD_REQUEST;
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    answer
}

/// A refusal before the protocol: JSON, as every 4xx of the contract.
fn refused(status: StatusCode, why: &str) -> Response<Body> {
    let body = serde_json::json!({ "error": why, "status": status.as_u16() }).to_string();
    let mut answer = Response::new(Body::from(body));
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    answer
}

impl tower::Service<Request<Body>> for McpService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { Ok(inner.call(request).await) })
    }
}
