//! Event streams shared fairly: a bound on all the streams of a kind (the status page's, the
//! dashboard's) and one per client address, so that one client cannot take every place while
//! everyone else is turned away. Refusals are counted for `/metrics`.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::ConnectInfo;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use crate::error::ApiError;
use crate::sync::lock;

/// How long a refused client is asked to wait, in seconds: the pages then refresh every
/// minute instead.
const RETRY_AFTER_SECS: &str = "60";

/// The streams of one kind: at most `total` open, at most `per_address` from one address.
#[derive(Debug)]
pub struct StreamLimits {
    /// What the streams are, for messages and metrics: `page`, `dashboard`.
    pub kind: &'static str,
    total: usize,
    per_address: usize,
    open: Mutex<Open>,
    /// Refused because every place was taken.
    pub refused_total: AtomicU64,
    /// Refused because the client's address had its share.
    pub refused_address: AtomicU64,
}

#[derive(Debug, Default)]
struct Open {
    all: usize,
    by_address: HashMap<IpAddr, usize>,
}

/// One open stream, counted until dropped.
#[derive(Debug)]
pub struct StreamSlot {
    limits: Arc<StreamLimits>,
    from: Option<IpAddr>,
}

impl StreamLimits {
    /// The bounds of the streams of `kind`: `total` at once, `per_address` from one address.
    pub fn new(kind: &'static str, total: usize, per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            kind,
            total,
            per_address,
            open: Mutex::default(),
            refused_total: AtomicU64::new(0),
            refused_address: AtomicU64::new(0),
        })
    }

    /// Streams open now.
    pub fn open(&self) -> usize {
        lock(&self.open).all
    }

    /// A place for a stream from `from` (the connection's address, when the server says it),
    /// or the refusal: 429 when the address has its share, 503 when every place is taken,
    /// both with `Retry-After`.
    pub fn try_open(self: &Arc<Self>, from: Option<IpAddr>) -> Result<StreamSlot, Refused> {
        let mut open = lock(&self.open);
        if let Some(ip) = from {
            if open.by_address.get(&ip).copied().unwrap_or(0) >= self.per_address {
                self.refused_address.fetch_add(1, Ordering::Relaxed);
                return Err(Refused(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "too many {} event streams from this address (at most {}); \
                         refresh instead",
                        self.kind, self.per_address
                    ),
                ));
            }
        }
        if open.all >= self.total {
            self.refused_total.fetch_add(1, Ordering::Relaxed);
            return Err(Refused(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "too many {} event streams open (at most {})",
                    self.kind, self.total
                ),
            ));
        }
        open.all += 1;
        if let Some(ip) = from {
            *open.by_address.entry(ip).or_default() += 1;
        }
        Ok(StreamSlot {
            limits: Arc::clone(self),
            from,
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = lock(&self.limits.open);
        open.all = open.all.saturating_sub(1);
        if let Some(ip) = self.from {
            if let Some(n) = open.by_address.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    open.by_address.remove(&ip);
                }
            }
        }
    }
}

/// A stream refused: the contract's JSON error, with `Retry-After`.
#[derive(Debug)]
pub struct Refused(StatusCode, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut response = ApiError::new(self.0, self.1).into_response();
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECS));
        response
    }
}

/// The client's address, as the server recorded it for the connection (status-http's `serve`
/// does, as does `into_make_service_with_connect_info`); `None` elsewhere (only the total
/// bound then applies).
pub type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// The address of `peer`, IPv4-mapped IPv6 addresses as IPv4.
pub fn address(peer: Peer) -> Option<IpAddr> {
    peer.map(|Extension(ConnectInfo(addr))| addr.ip().to_canonical())
}
