//! Checks a test can steer, and a clock it can skew.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use status_core::check::{Check, CheckOutcome};
use status_core::{CheckStatus, Clock, Dependency, DependencyBuilder, Registry, TimeSource};
use tokio::time::Instant;

/// What a [`Steered`] check does on its next runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Mode {
    Status(CheckStatus),
    Hang,
    Panic(&'static str),
    Slow(Duration, CheckStatus),
}

/// A check whose behaviour the test sets, counting its runs.
#[derive(Debug, Clone)]
pub(crate) struct Steered {
    mode: Arc<Mutex<Mode>>,
    runs: Arc<AtomicUsize>,
    started: Arc<Mutex<Vec<Instant>>>,
}

impl Steered {
    pub(crate) fn new(mode: Mode) -> Self {
        Self {
            mode: Arc::new(Mutex::new(mode)),
            runs: Arc::new(AtomicUsize::new(0)),
            started: Arc::new(Mutex::new(Vec::new())),
        }
    }

    pub(crate) fn ok() -> Self {
        Self::new(Mode::Status(CheckStatus::Ok))
    }

    pub(crate) fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub(crate) fn set_status(&self, status: CheckStatus) {
        self.set(Mode::Status(status));
    }

    /// When each run started.
    pub(crate) fn started(&self) -> Vec<Instant> {
        self.started.lock().unwrap().clone()
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// Registers [`dependency`](Self::dependency) `id` in `registry`, adjusted by `adjust`.
    pub(crate) fn register(
        &self,
        registry: &Registry,
        id: &str,
        adjust: impl FnOnce(DependencyBuilder) -> DependencyBuilder,
    ) {
        registry
            .add(adjust(self.dependency(id)).build().unwrap())
            .unwrap();
    }

    /// A dependency checked by this, with a long period so only the test triggers checks
    /// after the first, and no jitter.
    pub(crate) fn dependency(&self, id: &str) -> DependencyBuilder {
        Dependency::builder(id, self.clone())
            .period(Duration::from_secs(3600))
            .timeout(Duration::from_secs(2))
    }
}

impl Check for Steered {
    async fn check(&self) -> CheckOutcome {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.lock().unwrap().push(Instant::now());
        let mode = self.mode.lock().unwrap().clone();
        match mode {
            Mode::Status(status) => CheckOutcome::new(status, format!("steered {status}")),
            Mode::Hang => std::future::pending().await,
            Mode::Panic(message) => panic!("{message}"),
            Mode::Slow(delay, status) => {
                tokio::time::sleep(delay).await;
                CheckOutcome::new(status, format!("slow {status}"))
            }
        }
    }
}

/// 2026-01-01T00:00:00Z.
pub(crate) fn epoch() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

/// A registry on Tokio's paused time starting at [`epoch`], no jitter.
pub(crate) fn registry() -> Registry {
    Registry::builder()
        .clock(Clock::tokio_starting_at(epoch()))
        .hostname("test-host")
        .appname("test-app")
        .jitter(0.0)
        .build()
}

/// Tokio's clock plus an offset the test moves: what a process sees after a suspend, or a
/// scheduler that stopped running.
#[derive(Debug, Clone)]
pub(crate) struct SkewedClock {
    offset_ms: Arc<AtomicU64>,
    anchor: Instant,
}

impl SkewedClock {
    pub(crate) fn new() -> Self {
        Self {
            offset_ms: Arc::new(AtomicU64::new(0)),
            anchor: Instant::now(),
        }
    }

    pub(crate) fn skip(&self, by: Duration) {
        self.offset_ms
            .fetch_add(u64::try_from(by.as_millis()).unwrap(), Ordering::SeqCst);
    }
}

impl TimeSource for SkewedClock {
    fn now(&self) -> Instant {
        Instant::now() + Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }

    fn wall_at(&self, instant: Instant) -> DateTime<Utc> {
        epoch() + instant.saturating_duration_since(self.anchor)
    }
}

/// Lets spawned tasks run until nothing is ready, without moving paused time.
pub(crate) async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

/// What a `tracing` subscriber writes, kept for a test to read.
#[derive(Clone, Default)]
pub(crate) struct Logged(Arc<Mutex<Vec<u8>>>);

impl Logged {
    /// Captures this thread's log lines (every level) until the guard is dropped.
    pub(crate) fn capture() -> (Self, tracing::subscriber::DefaultGuard) {
        let logged = Self::default();
        let writer = logged.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        let guard = tracing::subscriber::set_default(subscriber);
        // Callsites another test's thread registered while no subscriber listened there may
        // have cached "never": ask them again, now that this thread's does.
        tracing::callsite::rebuild_interest_cache();
        (logged, guard)
    }

    /// Everything written so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl std::io::Write for Logged {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        std::io::Result::Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::Result::Ok(())
    }
}
