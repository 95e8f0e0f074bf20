//! The audit trail: every call to a route that checks the admin token, who made it (when
//! the call named an actor), from which address, and how it ended; the last [`AUDIT_KEPT`] at
//! `GET /admin/audit` (admin only). It lives in the process: a restart starts it empty.
//!
//! Calls refused for their credentials (401, 403) are kept apart: the last
//! [`REFUSALS_KEPT`], and a count since start, so that a flood of calls without a token can
//! never push an operator's actions out of the trail. A handler that panics is answered 500
//! and recorded as any other call.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{SecondsFormat, Utc};
use pin_project_lite::pin_project;
use serde::Serialize;
use tower::{Layer, Service};

use crate::error::ApiError;
use crate::sync::lock;

/// How many entries the trail keeps; older ones go.
pub const AUDIT_KEPT: usize = 1000;

/// How many calls refused for their credentials are kept, apart from the trail.
pub const REFUSALS_KEPT: usize = 100;

/// One admin call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    /// When it was answered (RFC 3339, UTC).
    pub at: String,
    /// The method and the path (no query string).
    pub method: String,
    /// The path called.
    pub path: String,
    /// The status it was answered.
    pub status: u16,
    /// Whether it was refused (any answer but a 2xx).
    pub refused: bool,
    /// Who made it, when the call said (`actor` in its body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// Why, when the call said (`reason` in its body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The address it came from, when the server said (`ConnectInfo`; [`crate::serve()`]
    /// always does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

impl AuditEntry {
    /// Whether the call was turned away for its credentials: no token, a wrong one, or
    /// admin calls disabled.
    #[must_use]
    pub fn unauthenticated(&self) -> bool {
        matches!(self.status, 401 | 403)
    }
}

/// What the trail keeps: the calls made with the token, and apart, those refused for their
/// credentials.
#[derive(Debug, Default)]
struct Trail {
    entries: VecDeque<AuditEntry>,
    refusals: VecDeque<AuditEntry>,
    refused_total: u64,
}

/// The audit trail: the last [`AUDIT_KEPT`] admin calls. Cheap to clone: clones share it.
/// Give the same one to [`Routes::audit`](crate::Routes::audit) and to the layer of your own
/// admin routes ([`layer`](Self::layer)) to keep one trail.
#[derive(Clone, Default)]
pub struct AuditLog {
    trail: Arc<Mutex<Trail>>,
    observers: Arc<Mutex<Vec<Observer>>>,
}

/// Called with each entry as it is recorded.
type Observer = Arc<dyn Fn(&AuditEntry) + Send + Sync>;

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field(
                "entries",
                &self.trail.lock().map(|t| t.entries.len()).unwrap_or(0),
            )
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// An empty trail.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The calls made with the token (whatever their outcome), newest first.
    #[must_use]
    pub fn entries(&self) -> Vec<AuditEntry> {
        let trail = lock(&self.trail);
        trail.entries.iter().rev().cloned().collect()
    }

    /// The last calls refused for their credentials, newest first.
    #[must_use]
    pub fn refusals(&self) -> Vec<AuditEntry> {
        let trail = lock(&self.trail);
        trail.refusals.iter().rev().cloned().collect()
    }

    /// How many calls were refused for their credentials since start.
    #[must_use]
    pub fn refused_total(&self) -> u64 {
        lock(&self.trail).refused_total
    }

    /// A layer that records every call to the routes it wraps.
    #[must_use]
    pub fn layer(&self) -> AuditLayer {
        AuditLayer { log: self.clone() }
    }

    /// Calls `observer` with every entry recorded from now on, as it is recorded: to send
    /// the trail to notification sinks, say (`Notifications::tell` with a `Notice::Audit`).
    /// It runs on the request's task: it must not block.
    pub fn on_record(&self, observer: impl Fn(&AuditEntry) + Send + Sync + 'static) {
        lock(&self.observers).push(Arc::new(observer));
    }

    fn record(&self, entry: AuditEntry) {
        let observers = lock(&self.observers).clone();
        for observer in &observers {
            observer(&entry);
        }
        let mut trail = lock(&self.trail);
        let (ring, kept) = if entry.unauthenticated() {
            trail.refused_total += 1;
            (&mut trail.refusals, REFUSALS_KEPT)
        } else {
            (&mut trail.entries, AUDIT_KEPT)
        };
        if ring.len() == kept {
            ring.pop_front();
        }
        ring.push_back(entry);
    }
}

/// Who made a call, as its handler read it from the body: a response extension the
/// [`AuditLayer`] records.
#[derive(Debug, Clone)]
pub(crate) struct AuditSaid {
    pub(crate) actor: Option<String>,
    pub(crate) reason: Option<String>,
}

/// Records every call to the routes it wraps in an [`AuditLog`].
#[derive(Debug, Clone)]
pub struct AuditLayer {
    log: AuditLog,
}

impl<S> Layer<S> for AuditLayer {
    type Service = Audited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Audited {
            inner,
            log: self.log.clone(),
        }
    }
}

/// The service of [`AuditLayer`].
#[derive(Debug, Clone)]
pub struct Audited<S> {
    inner: S,
    log: AuditLog,
}

impl<S, B> Service<Request<B>> for Audited<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = AuditFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let address = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0.ip().to_string());
        AuditFuture {
            method: request.method().clone(),
            path: request.uri().path().to_owned(),
            address,
            log: self.log.clone(),
            inner: self.inner.call(request),
        }
    }
}

pin_project! {
    /// The response future of [`Audited`].
    pub struct AuditFuture<F> {
        #[pin]
        inner: F,
        method: Method,
        path: String,
        address: Option<String>,
        log: AuditLog,
    }
}

impl<F, E> Future for AuditFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        // A handler that panics is answered and recorded all the same: every admin call
        // leaves a trace.
        let inner = this.inner;
        let result = match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => ready!(poll),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(method = %this.method, path = %this.path, "admin handler panicked: {what}");
                Ok(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the call failed inside the server; nothing is known to have changed",
                )
                .into_response())
            }
        };
        if let Ok(response) = &result {
            let status = response.status();
            let said = response.extensions().get::<AuditSaid>();
            this.log.record(AuditEntry {
                at: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
                method: this.method.to_string(),
                path: std::mem::take(this.path),
                status: status.as_u16(),
                refused: !status.is_success(),
                actor: said.and_then(|s| s.actor.clone()),
                reason: said.and_then(|s| s.reason.clone()),
                address: this.address.take(),
            });
        }
        Poll::Ready(result)
    }
}
