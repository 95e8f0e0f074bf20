//! The audit trail: every act of a holder of the admin token (a drain, an override, a mute,
//! a refresh, a refusal of one), who did it (the operator whose token made the call), from which address,
//! and how it ended, as one [`AuditRecord`] (status-core's: the same record a history keeps).
//! `GET /admin/audit` answers it, newest first, a page at a time; with a history
//! ([`Routes::history`](crate::Routes::history)) from the durable record, so that it
//! survives restarts, else from the last [`AUDIT_KEPT`] kept in the process.
//!
//! Reads made with the token (the trail itself, the mutes, the incidents) change nothing and
//! are not acts: they are counted per route and caller, not recorded, so that reading the
//! trail never adds to it. Calls refused for their credentials (401, 403) are kept apart: the
//! last [`REFUSALS_KEPT`], and a count since start, so that a flood of calls without a token
//! can never push an operator's acts out of the trail. A handler that panics is answered 500
//! and recorded as any other call.

use status_http_core::audit::AuditSaid;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{ready, Context, Poll};

use axum::extract::{ConnectInfo, MatchedPath};
use axum::http::{Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use pin_project_lite::pin_project;
use serde::Serialize;
pub use status_core::AuditRecord;
use tower::{Layer, Service};

use crate::auth::AdminAuth;
use crate::error::ApiError;
use crate::sync::lock;

/// How many acts the trail keeps in the process; older ones go (a history keeps them all).
pub const AUDIT_KEPT: usize = 1000;

/// How many calls refused for their credentials are kept, apart from the trail.
pub const REFUSALS_KEPT: usize = 100;

/// How many (route, caller) pairs of reads are counted apart; the rest are counted together.
const READERS_KEPT: usize = 1000;

/// Reads made with the token by one caller on one route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadCount {
    /// The method and the route (`GET /admin/audit`).
    pub route: String,
    /// The caller's address (`unknown` when the server did not say; `others` for callers
    /// past the first thousand).
    pub caller: String,
    /// How many since start.
    pub count: u64,
}

/// What the trail keeps in the process.
#[derive(Debug, Default)]
struct Trail {
    /// Acts, each with its id (counted from 1 at start), oldest first.
    entries: VecDeque<(i64, AuditRecord)>,
    last_id: i64,
    refusals: VecDeque<AuditRecord>,
    refused_total: u64,
    reads: BTreeMap<(String, String), u64>,
}

/// Reads a page of a durable trail: records before an id, at most so many, newest first.
pub(crate) type DurableTrail = Arc<
    dyn Fn(
            Option<i64>,
            usize,
        )
            -> Pin<Box<dyn Future<Output = Result<Vec<(i64, AuditRecord)>, ApiError>> + Send>>
        + Send
        + Sync,
>;

/// The audit trail. Cheap to clone: clones share it. Give the same one to
/// [`Routes::audit`](crate::Routes::audit) and to the layer of your own admin routes
/// ([`layer`](Self::layer)) to keep one trail.
#[derive(Clone, Default)]
pub struct AuditLog {
    trail: Arc<Mutex<Trail>>,
    observers: Arc<Mutex<Vec<Observer>>>,
    durable: Arc<OnceLock<DurableTrail>>,
    operators: Arc<OnceLock<AdminAuth>>,
}

/// Called with each record as it is recorded.
type Observer = Arc<dyn Fn(&AuditRecord) + Send + Sync>;

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field(
                "entries",
                &self.trail.lock().map(|t| t.entries.len()).unwrap_or(0),
            )
            .field("durable", &self.durable.get().is_some())
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// An empty trail.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The acts kept in the process (whatever their outcome), newest first.
    #[must_use]
    pub fn entries(&self) -> Vec<AuditRecord> {
        let trail = lock(&self.trail);
        trail.entries.iter().rev().map(|(_, r)| r.clone()).collect()
    }

    /// The acts kept in the process before the act `before`, at most `limit`, newest
    /// first, with their ids.
    #[must_use]
    pub fn page(&self, before: Option<i64>, limit: usize) -> Vec<(i64, AuditRecord)> {
        let trail = lock(&self.trail);
        trail
            .entries
            .iter()
            .rev()
            .filter(|(id, _)| before.is_none_or(|b| *id < b))
            .take(limit)
            .cloned()
            .collect()
    }

    /// The last calls refused for their credentials, newest first.
    #[must_use]
    pub fn refusals(&self) -> Vec<AuditRecord> {
        let trail = lock(&self.trail);
        trail.refusals.iter().rev().cloned().collect()
    }

    /// How many calls were refused for their credentials since start.
    #[must_use]
    pub fn refused_total(&self) -> u64 {
        lock(&self.trail).refused_total
    }

    /// Reads made with the token since start, per route and caller, the most first.
    #[must_use]
    pub fn reads(&self) -> Vec<ReadCount> {
        let trail = lock(&self.trail);
        let mut reads: Vec<ReadCount> = trail
            .reads
            .iter()
            .map(|((route, caller), count)| ReadCount {
                route: route.clone(),
                caller: caller.clone(),
                count: *count,
            })
            .collect();
        reads.sort_by_key(|r| std::cmp::Reverse(r.count));
        reads
    }

    /// The operators whose tokens name each act's actor: the one set the routes it wraps
    /// authenticate with ([`Routes::admin_auth`](crate::Routes::admin_auth) sets it; the
    /// first set holds). The actor of an act is the operator whose token made the call,
    /// never what the call's body claims; none for a call no operator's token made.
    pub fn operators(&self, auth: AdminAuth) {
        let _ = self.operators.set(auth);
    }

    /// The operator whose token `headers` carry, if any.
    fn operator_of(&self, headers: &axum::http::HeaderMap) -> Option<String> {
        let operator = self.operators.get()?.operator(headers).ok()?;
        Some(operator.name().to_owned())
    }

    /// A layer that records every call to the routes it wraps.
    #[must_use]
    pub fn layer(&self) -> AuditLayer {
        AuditLayer { log: self.clone() }
    }

    /// Calls `observer` with every act and refusal recorded from now on (reads are only
    /// counted), as it is recorded: to send the trail to notification sinks, say
    /// (`Notifications::tell` with a `Notice::Audit`). It runs on the request's task: it
    /// must not block.
    pub fn on_record(&self, observer: impl Fn(&AuditRecord) + Send + Sync + 'static) {
        lock(&self.observers).push(Arc::new(observer));
    }

    /// Where the trail is read from when it is kept durably (set once, by the history).
    #[cfg_attr(not(feature = "history"), allow(dead_code))]
    pub(crate) fn keep_durably(&self, trail: DurableTrail) {
        let _ = self.durable.set(trail);
    }

    /// The durable trail, if one is kept.
    pub(crate) fn durable(&self) -> Option<&DurableTrail> {
        self.durable.get()
    }

    fn record(&self, record: AuditRecord) {
        let observers = lock(&self.observers).clone();
        for observer in &observers {
            observer(&record);
        }
        let mut trail = lock(&self.trail);
        if record.unauthenticated() {
            trail.refused_total += 1;
            if trail.refusals.len() == REFUSALS_KEPT {
                trail.refusals.pop_front();
            }
            trail.refusals.push_back(record);
        } else {
            trail.last_id += 1;
            let id = trail.last_id;
            if trail.entries.len() == AUDIT_KEPT {
                trail.entries.pop_front();
            }
            trail.entries.push_back((id, record));
        }
    }

    fn count_read(&self, route: String, caller: Option<String>) {
        let mut trail = lock(&self.trail);
        let mut key = (route, caller.unwrap_or_else(|| "unknown".into()));
        if !trail.reads.contains_key(&key) && trail.reads.len() >= READERS_KEPT {
            key.1 = "others".into();
        }
        *trail.reads.entry(key).or_default() += 1;
    }
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
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| request.uri().path(), MatchedPath::as_str)
            .to_owned();
        let actor = self.log.operator_of(request.headers());
        AuditFuture {
            actor,
            method: request.method().clone(),
            path: request.uri().path().to_owned(),
            route: Some(route),
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
        actor: Option<String>,
        method: Method,
        path: String,
        route: Option<String>,
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
            let read = matches!(*this.method, Method::GET | Method::HEAD);
            if read && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                // A read changes nothing: counted, not recorded.
                let route = format!("{} {}", this.method, this.route.take().unwrap_or_default());
                this.log.count_read(route, this.address.take());
            } else {
                let said = response.extensions().get::<AuditSaid>();
                let path = std::mem::take(this.path);
                this.log.record(AuditRecord {
                    at: Utc::now(),
                    // The token's operator; a handler's word where no set of operators
                    // was given (an application's own routes).
                    actor: this
                        .actor
                        .take()
                        .or_else(|| said.and_then(|s| s.actor.clone())),
                    action: format!("{} {path}", this.method),
                    target: path,
                    reason: said.and_then(|s| s.reason.clone()),
                    address: this.address.take(),
                    outcome: status.as_u16().to_string(),
                });
            }
        }
        Poll::Ready(result)
    }
}
