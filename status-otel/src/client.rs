//! The HTTP client every export goes through: the application's Tokio runtime, no redirect
//! followed, bounded in time and in what it reads back, and counting what it sent.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};
use tokio::runtime::Handle;

/// The most of an answer read back: a collector's answer is a few bytes (a partial-success
/// message at most); anything longer is cut, never buffered whole.
pub(crate) const MAX_ANSWER: usize = 64 * 1024;

/// The longest a collector's `Retry-After` holds a signal back: a collector that asks for an
/// hour is heard for two minutes, then tried again.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How long a `Retry-After` value asks to wait (delay-seconds or an HTTP date, RFC 9110),
/// at most [`MAX_RETRY_AFTER`]; `None` when it is neither.
pub(crate) fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => {
            let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
            (at.with_timezone(&chrono::Utc) - now)
                .to_std()
                .unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The signals, in the order [`Counts`] keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    Metrics,
    Logs,
    Traces,
}

impl Signal {
    pub(crate) const ALL: [Signal; 3] = [Signal::Metrics, Signal::Logs, Signal::Traces];

    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Signal::Metrics => "metrics",
            Signal::Logs => "logs",
            Signal::Traces => "traces",
        }
    }

    /// The signal an OTLP/HTTP request is for, by its path (`/v1/metrics`, …); a URL set per
    /// signal may have any path, so the exporter's own signal wins where it is known.
    fn of_path(path: &str) -> Option<Signal> {
        Signal::ALL
            .into_iter()
            .find(|s| path.ends_with(&format!("/v1/{}", s.as_str())))
    }
}

/// What was sent per signal, shared by the client and [`Otlp::stats`](crate::Otlp::stats).
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) sent: [AtomicU64; 3],
    pub(crate) failed: [AtomicU64; 3],
    /// The last failure, in words, and whether the latest request failed.
    pub(crate) last_error: Mutex<Option<String>>,
    pub(crate) failing: std::sync::atomic::AtomicBool,
}

impl Counts {
    fn record(&self, signal: Option<Signal>, outcome: Result<(), String>) {
        let i = signal.map_or(0, |s| s as usize);
        match outcome {
            Ok(()) => {
                self.sent[i].fetch_add(1, Ordering::Relaxed);
                self.failing.store(false, Ordering::Relaxed);
            }
            Err(e) => {
                self.failed[i].fetch_add(1, Ordering::Relaxed);
                self.failing.store(true, Ordering::Relaxed);
                if let Ok(mut last) = self.last_error.lock() {
                    *last = Some(e);
                }
            }
        }
    }
}

/// Sends each export on the runtime it was made on, whatever thread asks (the SDK's reader
/// runs on a thread of its own), under a deadline that covers the whole exchange.
pub(crate) struct Client {
    client: reqwest::Client,
    runtime: Handle,
    timeout: Duration,
    counts: Arc<Counts>,
    /// Per signal, until when the collector asked not to be sent anything (`Retry-After` on a
    /// 429 or 503).
    held: Mutex<[Option<std::time::Instant>; 3]>,
}

impl Client {
    pub(crate) fn new(
        runtime: Handle,
        timeout: Duration,
        counts: Arc<Counts>,
    ) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()?;
        Ok(Self {
            client,
            runtime,
            timeout,
            counts,
            held: Mutex::new([None; 3]),
        })
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let signal = Signal::of_path(request.uri().path());
        let slot = signal.map_or(0, |s| s as usize);
        let held = self.held.lock().ok().and_then(|held| held[slot]);
        if let Some(until) = held.filter(|until| std::time::Instant::now() < *until) {
            // What the collector asked: nothing until then. This batch is dropped, counted.
            let left = until.saturating_duration_since(std::time::Instant::now());
            let why = format!(
                "held back: the collector asked to retry after {}s",
                left.as_secs() + 1
            );
            self.counts.record(signal, Err(why.clone()));
            return Err(HttpError::from(why));
        }
        // Counted even when the exporter gives up on this request before it ends.
        let mut pending = Pending {
            counts: &self.counts,
            signal,
            done: false,
        };
        let request = reqwest::Request::try_from(request.map(reqwest::Body::from))?;
        let client = self.client.clone();
        let timeout = self.timeout;
        let exchange = self.runtime.spawn(async move {
            tokio::time::timeout(timeout, async move {
                let mut response = client.execute(request).await?;
                let mut answer = http::Response::builder().status(response.status());
                for (name, value) in response.headers() {
                    answer = answer.header(name, value);
                }
                let mut body = Vec::new();
                while let Some(chunk) = response.chunk().await? {
                    let room = MAX_ANSWER.saturating_sub(body.len());
                    body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    if room <= chunk.len() {
                        break;
                    }
                }
                Ok::<_, HttpError>(answer.body(Bytes::from(body))?)
            })
            .await
            .map_err(|_| HttpError::from(format!("timed out: no answer within {timeout:?}")))?
        });
        let answer = match exchange.await {
            Ok(answer) => answer,
            Err(e) => Err(HttpError::from(format!("the export task ended: {e}"))),
        };
        if let Ok(response) = &answer {
            let status = response.status();
            let asked = (status == http::StatusCode::TOO_MANY_REQUESTS
                || status == http::StatusCode::SERVICE_UNAVAILABLE)
                .then(|| response.headers().get(http::header::RETRY_AFTER))
                .flatten()
                .and_then(|v| v.to_str().ok())
                .and_then(|v| retry_after(v, chrono::Utc::now()));
            if let (Some(wait), Ok(mut held)) = (asked, self.held.lock()) {
                held[slot] = Some(std::time::Instant::now() + wait);
                tracing::warn!(
                    signal = signal.map_or("unknown", Signal::as_str),
                    seconds = wait.as_secs(),
                    "the OTLP collector asked to retry later: this signal waits"
                );
            }
        }
        let outcome = match &answer {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) => Err(format!("the collector answered {}", response.status())),
            Err(e) => Err(error_chain(e.as_ref())),
        };
        pending.done = true;
        self.counts.record(signal, outcome);
        answer
    }
}

/// A request under way: dropped before it ended (the exporter's own deadline), a failure.
struct Pending<'a> {
    counts: &'a Counts,
    signal: Option<Signal>,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.counts.record(
                self.signal,
                Err("abandoned: past the export's deadline".to_owned()),
            );
        }
    }
}

/// An error and its sources, `: `-separated.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_a_date_and_bounded() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-28T09:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(retry_after("30", now), Some(Duration::from_secs(30)));
        assert_eq!(retry_after("86400", now), Some(MAX_RETRY_AFTER));
        assert_eq!(
            retry_after("Sat, 28 Nov 2026 09:00:45 GMT", now),
            Some(Duration::from_secs(45))
        );
        assert_eq!(
            retry_after("Sat, 28 Nov 2026 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-5", now), None);
    }
}
