//! The floor below the driver and the builder: each sink's bounded queue and the worker that
//! delivers it with retries, and the hooks the builder hands the driver.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use status_core::Rng;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::sync::lock;
use crate::{IncidentLink, Message, Notice, Sink, Told};

/// Finds the incident a notice belongs to.
pub(crate) type IncidentOf = Arc<
    dyn Fn(
            &Notice,
        )
            -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<IncidentLink>> + Send>>
        + Send
        + Sync,
>;

/// How long a message waits for its incident before it goes without.
pub(crate) const INCIDENT_PATIENCE: Duration = Duration::from_secs(3);

/// What was told before a restart, as the application's store answers it.
pub(crate) type RecallTold =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<Told>> + Send>>;

/// How long the driver waits for what was told before a restart before it starts without.
pub(crate) const RECALL_PATIENCE: Duration = Duration::from_secs(10);

/// Called with what was told each time it changes.
pub(crate) type OnTold = Arc<dyn Fn(&Told) + Send + Sync>;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) attempt_timeout: Duration,
    pub(crate) max_age: Duration,
    pub(crate) retry_after: Duration,
}

/// What a sink did since start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SinkStats {
    /// The sink's name.
    pub sink: String,
    /// Messages delivered.
    pub delivered: u64,
    /// Attempts that failed (each is retried until the message is too old).
    pub failed_attempts: u64,
    /// Messages dropped: the queue was full (the oldest goes), or retried past their age.
    pub dropped: u64,
    /// Messages waiting now.
    pub queued: usize,
}

/// One sink's waiting messages and counts.
#[derive(Debug)]
pub(crate) struct Queue {
    pub(crate) name: String,
    capacity: usize,
    waiting: Mutex<VecDeque<(Instant, Arc<Message>)>>,
    ready: Notify,
    closed: AtomicBool,
    delivered: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
}

impl Queue {
    pub(crate) fn new(name: String, capacity: usize) -> Self {
        Self {
            name,
            capacity,
            waiting: Mutex::default(),
            ready: Notify::new(),
            closed: AtomicBool::new(false),
            delivered: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    pub(crate) fn push(&self, message: Arc<Message>) {
        let mut waiting = lock(&self.waiting);
        if waiting.len() == self.capacity {
            waiting.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(sink = %self.name, "notification queue full: the oldest dropped");
        }
        waiting.push_back((Instant::now(), message));
        drop(waiting);
        self.ready.notify_one();
    }

    fn pop(&self) -> Option<(Instant, Arc<Message>)> {
        lock(&self.waiting).pop_front()
    }

    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.ready.notify_one();
    }

    pub(crate) fn stats(&self) -> SinkStats {
        SinkStats {
            sink: self.name.clone(),
            delivered: self.delivered.load(Ordering::Relaxed),
            failed_attempts: self.failed.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            queued: lock(&self.waiting).len(),
        }
    }
}

/// The wait before retry `attempt` (from 1): `first` doubling to sixty times it, times a
/// jitter between 0.5 and 1.5 (`unit` in 0..1), so that sinks failing together do not retry
/// together.
fn backoff(first: Duration, attempt: u32, unit: f64) -> Duration {
    let doubled = first * (1u32 << attempt.saturating_sub(1).min(6));
    doubled.min(first * 60).mul_f64(0.5 + unit)
}

pub(crate) async fn deliver(
    sink: Arc<dyn Sink>,
    queue: Arc<Queue>,
    settings: Settings,
    mut rng: Rng,
) {
    loop {
        let Some((queued, message)) = queue.pop() else {
            if queue.closed.load(Ordering::Acquire) {
                return;
            }
            queue.ready.notified().await;
            continue;
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            match sink.deliver(&message, settings.attempt_timeout).await {
                Ok(()) => {
                    queue.delivered.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(e) => {
                    queue.failed.fetch_add(1, Ordering::Relaxed);
                    let wait = backoff(settings.retry_after, attempt, rng.next_f64());
                    if queued.elapsed() + wait > settings.max_age {
                        queue.dropped.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(sink = %queue.name, id = %message.id, "notification dropped after {attempt} attempts: {e}");
                        break;
                    }
                    tracing::debug!(sink = %queue.name, attempt, "notification not delivered, retrying: {e}");
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute_with_jitter() {
        let s = Duration::from_secs;
        assert_eq!(backoff(s(1), 1, 0.5), s(1));
        assert_eq!(backoff(s(1), 2, 0.5), s(2));
        assert_eq!(backoff(s(1), 7, 0.5), s(60));
        assert_eq!(backoff(s(1), 30, 0.5), s(60));
        assert_eq!(backoff(s(1), 1, 0.0), Duration::from_millis(500));
        assert!(backoff(s(1), 7, 0.999) < s(90));
    }
}
