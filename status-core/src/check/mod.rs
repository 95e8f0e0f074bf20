//! What a check is, and the kinds of check the core ships.
//!
//! A check is anything implementing [`Check`]; closures become checks through the
//! constructors here:
//!
//! | constructor | the closure returns | status |
//! |---|---|---|
//! | [`ping`] | `Result<T, E>` | `Ok` → OK, `Err` → OUTAGE with the error chain |
//! | [`tiered`] | a [`CheckStatus`] and a message | as returned |
//! | [`threshold`] | `Result<f64, E>`, a measured value | the value against a [`Threshold`] |
//! | [`blocking`] | as [`tiered`], from blocking code | run on Tokio's blocking pool |
//!
//! and [`FailureRatio`] turns successes and failures, from live traffic or a probe, into a
//! status by their ratio over a sliding window.
//!
//! Checks of real components (Redis, PostgreSQL, HTTP, TCP and DNS, disk and memory, TLS
//! certificates, memcached, etcd, MySQL, RabbitMQ, NATS) live in the satellite crate
//! `status-checks`, each behind its cargo feature: the core holds the model, the engine,
//! probes and facts.

mod outcome;
mod ratio;
mod threshold;
mod unit;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;

pub use self::outcome::{BoxError, CheckOutcome, ErrorChain};
pub use self::ratio::{FailureRatio, FailureRecorder};
pub use self::threshold::Threshold;
pub use self::unit::{Quantity, Unit};
use crate::CheckStatus;

/// A health check of one dependency.
///
/// The engine runs it in its own task, under the dependency's timeout: a check does not need
/// its own timeout, and a panic in it is reported, not propagated.
///
/// # Example
///
/// ```
/// use status_core::check::{Check, CheckOutcome};
/// use status_core::CheckStatus;
///
/// struct QueueDepth;
///
/// impl Check for QueueDepth {
///     async fn check(&self) -> CheckOutcome {
///         let depth = 12; // measure it
///         if depth > 1000 {
///             CheckOutcome::new(CheckStatus::Major, format!("{depth} messages waiting"))
///         } else {
///             CheckOutcome::ok()
///         }
///     }
/// }
/// ```
pub trait Check: Send + Sync + 'static {
    /// Runs the check once.
    fn check(&self) -> impl Future<Output = CheckOutcome> + Send;

    /// Called once when the dependency is registered, with the registry's clock. A check
    /// that measures time itself (a failure ratio over a window, say) reads that clock from
    /// then on, so that it follows the registry's time like everything else. The default
    /// does nothing.
    fn attach(&self, clock: &crate::Clock) {
        let _ = clock;
    }
}

/// [`Check`] made object-safe, for the registry.
pub(crate) trait DynCheck: Send + Sync + 'static {
    fn check_boxed(&self) -> BoxFuture<'_, CheckOutcome>;
    fn attach_clock(&self, clock: &crate::Clock);
}

impl<C: Check> DynCheck for C {
    fn check_boxed(&self) -> BoxFuture<'_, CheckOutcome> {
        self.check().boxed()
    }

    fn attach_clock(&self, clock: &crate::Clock) {
        self.attach(clock);
    }
}

/// A check from a closure whose `Ok` means OK and whose `Err` means OUTAGE. See [`ping`].
#[derive(Debug, Clone)]
pub struct Ping<F> {
    f: F,
}

/// A check from an async closure that returns `Result<T, E>`: `Ok` is OK, `Err` is OUTAGE
/// with the error's message and chain.
///
/// # Example
///
/// ```
/// use status_core::check;
///
/// let check = check::ping(|| async {
///     tokio::net::TcpStream::connect("127.0.0.1:6379").await.map(drop)
/// });
/// # let _ = check;
/// ```
pub fn ping<F, Fut, T, E>(f: F) -> Ping<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send,
    E: Into<BoxError>,
{
    Ping { f }
}

impl<F, Fut, T, E> Check for Ping<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send,
    E: Into<BoxError>,
{
    async fn check(&self) -> CheckOutcome {
        match (self.f)().await {
            Ok(_) => CheckOutcome::ok(),
            Err(e) => CheckOutcome::from_error::<E>(e),
        }
    }
}

/// A check from a closure returning a status and a message. See [`tiered`].
#[derive(Debug, Clone)]
pub struct Tiered<F> {
    f: F,
}

/// A check from an async closure returning anything that converts into a [`CheckOutcome`]:
/// a [`CheckStatus`], a `(CheckStatus, message)` pair, or an outcome.
///
/// # Example
///
/// ```
/// use status_core::{check, CheckStatus};
///
/// let check = check::tiered(|| async {
///     let lag_seconds = 3;
///     match lag_seconds {
///         0..=5 => (CheckStatus::Ok, "replica in sync".to_owned()),
///         6..=60 => (CheckStatus::Minor, format!("replica {lag_seconds}s behind")),
///         _ => (CheckStatus::Major, format!("replica {lag_seconds}s behind")),
///     }
/// });
/// # let _ = check;
/// ```
pub fn tiered<F, Fut, O>(f: F) -> Tiered<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = O> + Send,
    O: Into<CheckOutcome>,
{
    Tiered { f }
}

impl<F, Fut, O> Check for Tiered<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = O> + Send,
    O: Into<CheckOutcome>,
{
    async fn check(&self) -> CheckOutcome {
        (self.f)().await.into()
    }
}

/// A check comparing a measured value with a [`Threshold`]. See [`threshold`].
#[derive(Debug, Clone)]
pub struct ThresholdCheck<F> {
    threshold: Threshold,
    f: F,
}

/// A check from an async closure measuring a value (`Ok(f64)`), graded by `threshold`. An
/// `Err` is OUTAGE.
///
/// # Example
///
/// ```
/// use status_core::check::{self, Threshold};
///
/// // Percent of the connection pool in use.
/// let threshold = Threshold::at_most(70.0, 85.0, 95.0).unwrap();
/// let check = check::threshold(threshold, || async { Ok::<_, std::io::Error>(42.0) });
/// # let _ = check;
/// ```
pub fn threshold<F, Fut, E>(threshold: Threshold, f: F) -> ThresholdCheck<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<f64, E>> + Send,
    E: Into<BoxError>,
{
    ThresholdCheck { threshold, f }
}

impl<F, Fut, E> Check for ThresholdCheck<F>
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<f64, E>> + Send,
    E: Into<BoxError>,
{
    async fn check(&self) -> CheckOutcome {
        match (self.f)().await {
            Ok(value) => self.threshold.grade(value),
            Err(e) => CheckOutcome::from_error::<E>(e),
        }
    }
}

/// A check running blocking code on Tokio's blocking pool. See [`blocking`].
#[derive(Debug)]
pub struct Blocking<F> {
    f: Arc<F>,
    busy: Arc<AtomicBool>,
}

/// A check from a *blocking* closure (a synchronous driver, a file system call), run on
/// Tokio's blocking pool so it never stalls the async workers.
///
/// A blocking call cannot be cancelled: when it outlives the dependency's timeout the check is
/// reported OUTAGE on time, and while that call is still running later runs report OUTAGE
/// at once instead of piling up more threads behind it.
///
/// # Example
///
/// ```
/// use status_core::{check, CheckStatus};
///
/// let check = check::blocking(|| match std::fs::metadata("/tmp") {
///     Ok(_) => (CheckStatus::Ok, String::new()),
///     Err(e) => (CheckStatus::Outage, e.to_string()),
/// });
/// # let _ = check;
/// ```
pub fn blocking<F, O>(f: F) -> Blocking<F>
where
    F: Fn() -> O + Send + Sync + 'static,
    O: Into<CheckOutcome> + Send + 'static,
{
    Blocking {
        f: Arc::new(f),
        busy: Arc::new(AtomicBool::new(false)),
    }
}

impl<F, O> Check for Blocking<F>
where
    F: Fn() -> O + Send + Sync + 'static,
    O: Into<CheckOutcome> + Send + 'static,
{
    async fn check(&self) -> CheckOutcome {
        if self.busy.swap(true, Ordering::AcqRel) {
            return CheckOutcome::new(
                CheckStatus::Outage,
                "The previous blocking check has not returned yet",
            );
        }
        let f = Arc::clone(&self.f);
        let busy = Arc::clone(&self.busy);
        let joined = tokio::task::spawn_blocking(move || {
            // Cleared when the call returns or unwinds, not when the caller gives up.
            let _guard = ClearOnDrop(busy);
            f().into()
        })
        .await;
        match joined {
            Ok(outcome) => outcome,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => CheckOutcome::new(CheckStatus::Outage, "The blocking check was cancelled"),
        }
    }
}

struct ClearOnDrop(Arc<AtomicBool>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ping_maps_ok_and_err() {
        let ok = ping(|| async { Ok::<_, std::io::Error>(()) });
        assert_eq!(ok.check().await.status(), CheckStatus::Ok);

        let err = ping(|| async {
            Err::<(), _>(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "connection refused",
            ))
        });
        let outcome = err.check().await;
        assert_eq!(outcome.status(), CheckStatus::Outage);
        assert_eq!(outcome.message(), "connection refused");
        let thrown = outcome.error().unwrap();
        assert_eq!(thrown.kind(), "std::io::error::Error");
    }

    #[tokio::test]
    async fn tiered_passes_status_and_message() {
        let check = tiered(|| async { (CheckStatus::Major, "lagging") });
        let outcome = check.check().await;
        assert_eq!(outcome.status(), CheckStatus::Major);
        assert_eq!(outcome.message(), "lagging");
    }

    #[tokio::test]
    async fn threshold_grades_and_fails_on_error() {
        let t = Threshold::at_most(1.0, 2.0, 3.0).unwrap();
        let check = threshold(t, || async { Ok::<_, std::io::Error>(2.5) });
        assert_eq!(check.check().await.status(), CheckStatus::Major);
        let failing = threshold(t, || async { Err::<f64, _>("sensor offline") });
        assert_eq!(failing.check().await.status(), CheckStatus::Outage);
    }

    #[tokio::test]
    async fn blocking_runs_off_the_workers_and_does_not_pile_up() {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let check = Arc::new(blocking(move || {
            wait.lock().unwrap().recv().ok();
            CheckStatus::Ok
        }));
        let first = tokio::spawn({
            let check = Arc::clone(&check);
            async move { check.check().await }
        });
        // Wait until the first call holds the blocking thread.
        while !check.busy.load(Ordering::Acquire) {
            tokio::task::yield_now().await;
        }
        let second = check.check().await;
        assert_eq!(second.status(), CheckStatus::Outage);
        assert!(second.message().contains("has not returned"));
        release.send(()).unwrap();
        assert_eq!(first.await.unwrap().status(), CheckStatus::Ok);
        assert!(!check.busy.load(Ordering::Acquire));
    }
}
