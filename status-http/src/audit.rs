//! The audit trail: every admin call, who made it (when the call named an actor), and how it
//! ended, refusals included; the last [`AUDIT_KEPT`] at `GET /admin/audit` (admin only). It
//! lives in the process: a restart starts it empty.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};

use axum::http::{Method, Request};
use axum::response::Response;
use chrono::{SecondsFormat, Utc};
use pin_project_lite::pin_project;
use serde::Serialize;
use tower::{Layer, Service};

/// How many entries the trail keeps; older ones go.
pub const AUDIT_KEPT: usize = 1000;

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
}

/// The audit trail: the last [`AUDIT_KEPT`] admin calls. Cheap to clone: clones share it.
/// Give the same one to [`Routes::audit`](crate::Routes::audit) and to the layer of your own
/// admin routes ([`layer`](Self::layer)) to keep one trail.
#[derive(Clone, Default)]
pub struct AuditLog {
    entries: Arc<Mutex<VecDeque<AuditEntry>>>,
    observers: Arc<Mutex<Vec<Observer>>>,
}

/// Called with each entry as it is recorded.
type Observer = Arc<dyn Fn(&AuditEntry) + Send + Sync>;

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field(
                "entries",
                &self.entries.lock().map(|e| e.len()).unwrap_or(0),
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

    /// The entries, newest first.
    #[must_use]
    pub fn entries(&self) -> Vec<AuditEntry> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.iter().rev().cloned().collect()
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
        self.observers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::new(observer));
    }

    fn record(&self, entry: AuditEntry) {
        let observers = self
            .observers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for observer in &observers {
            observer(&entry);
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() == AUDIT_KEPT {
            entries.pop_front();
        }
        entries.push_back(entry);
    }
}

/// Who made a call, as its handler read it from the body: a response extension the
/// [`AuditLayer`] records.
#[derive(Debug, Clone)]
pub(crate) struct AuditActor(pub(crate) String);

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
        AuditFuture {
            method: request.method().clone(),
            path: request.uri().path().to_owned(),
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
        let result = ready!(this.inner.poll(cx));
        if let Ok(response) = &result {
            let status = response.status();
            this.log.record(AuditEntry {
                at: Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true),
                method: this.method.to_string(),
                path: std::mem::take(this.path),
                status: status.as_u16(),
                refused: !status.is_success(),
                actor: response
                    .extensions()
                    .get::<AuditActor>()
                    .map(|a| a.0.clone()),
            });
        }
        Poll::Ready(result)
    }
}
