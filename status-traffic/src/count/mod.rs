//! Counting failures of live traffic: a tower layer that records each response as a success or
//! a failure (by a classifier), a handle the application reports its own failures through,
//! and both as a passive dependency (the error rate) and as the culler's input.
//!
//! Overload is not failure: the refusals of the shedding layer and of node pools are
//! [skipped](Counted::Skipped) by the classifiers this crate and status-http provide, whether
//! the counter sits inside the shedding layer or outside it (see [`overload`](crate::overload)).
//! Inside is still the better place: the counter then sees only the work that ran.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use status_core::check::{CheckOutcome, Threshold};
use status_core::{Clock, Reporter};
use tower::{Layer, Service};

use crate::overload::is_overload;
use crate::sync::lock;

mod window;

pub use self::window::FailureWindow;

/// What a classifier makes of one response: a success, a failure, or nothing to count (a
/// refusal of an overload mechanism: not a failure, and not work that ran).
///
/// A classifier may also answer a `bool` (`true`: failed), which converts into this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counted {
    /// A request that ran and did not fail.
    Success,
    /// A request that failed.
    Failure,
    /// Not counted at all: neither a failure nor a request.
    Skipped,
}

impl From<bool> for Counted {
    fn from(failed: bool) -> Self {
        if failed {
            Self::Failure
        } else {
            Self::Success
        }
    }
}

/// The classifier of a tower service whose errors are `BoxError`s: an error is a failure,
/// unless it is a refusal of an overload mechanism ([`is_overload`]), which is skipped.
///
/// # Example
///
/// ```
/// use status_traffic::count::{errors, Counted};
/// use status_traffic::shed::QueueFull;
/// use tower::BoxError;
///
/// assert_eq!(errors(&Ok::<_, BoxError>(())), Counted::Success);
/// assert_eq!(errors(&Err::<(), _>(BoxError::from("reset"))), Counted::Failure);
/// assert_eq!(errors(&Err::<(), _>(BoxError::from(QueueFull))), Counted::Skipped);
/// ```
#[must_use]
pub fn errors<T>(result: &Result<T, tower::BoxError>) -> Counted {
    match result {
        Ok(_) => Counted::Success,
        Err(error) if is_overload(&**error) => Counted::Skipped,
        Err(_) => Counted::Failure,
    }
}

/// Failures and requests over a sliding window, one slot a second. Cheap to clone: clones
/// share the counts.
#[derive(Debug, Clone)]
pub struct Failures {
    counts: Arc<Mutex<Counts>>,
    window: Duration,
    clock: Clock,
}

#[derive(Debug)]
struct Counts {
    failures: FailureWindow,
    requests: FailureWindow,
}

impl Failures {
    /// Counts over the last `window` (whole seconds).
    #[must_use]
    pub fn new(window: Duration) -> Self {
        Self {
            counts: Arc::new(Mutex::new(Counts {
                failures: FailureWindow::new(window),
                requests: FailureWindow::new(window),
            })),
            window,
            clock: Clock::tokio(),
        }
    }

    /// The clock it is told the time by: pass [`Registry::clock`](status_core::Registry::clock)
    /// so that its times lie on the registry's axis with every other mechanism's. Default:
    /// a Tokio clock of its own.
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Records a request that ended, failed or not.
    pub fn record(&self, failed: bool) {
        let now = self.clock.elapsed();
        let mut counts = self.lock();
        counts.requests.record(now, 1);
        if failed {
            counts.failures.record(now, 1);
        }
    }

    /// Records a failure the application saw (a request counted elsewhere, or none).
    pub fn failure(&self) {
        let now = self.clock.elapsed();
        self.lock().failures.record(now, 1);
    }

    /// Failures and requests in the window now.
    #[must_use]
    pub fn count(&self) -> (u64, u64) {
        let now = self.clock.elapsed();
        let counts = self.lock();
        (counts.failures.count(now), counts.requests.count(now))
    }

    /// The window.
    #[must_use]
    pub fn window(&self) -> Duration {
        self.window
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        lock(&self.counts)
    }

    /// Reports the error rate over the window (failures / requests, 0 without requests) to
    /// `reporter` every `period`, graded by `threshold`, from a task on the current Tokio
    /// runtime, until the registry is gone.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn report_to(
        &self,
        reporter: Reporter,
        period: Duration,
        threshold: Threshold,
    ) -> tokio::task::JoinHandle<()> {
        let failures = self.clone();
        crate::report::every(reporter, period, move || {
            let (failed, requests) = failures.count();
            let rate = if requests == 0 {
                0.0
            } else {
                failed as f64 / requests as f64
            };
            let message = format!(
                "{failed} failed of {requests} in the last {} s",
                failures.window.as_secs()
            );
            Some(CheckOutcome::new(threshold.status_of(rate), message).with_value(rate))
        })
    }
}

/// Layer counting each response of the service it wraps into [`Failures`], as `failed`
/// classifies it: a [`Counted`], or a `bool` (`true`: failed). status-http's
/// `traffic::server_errors` counts errors and 5xx, [`errors`] a service's errors; both skip
/// the refusals of overload mechanisms.
#[derive(Debug, Clone)]
pub struct CountLayer<F> {
    failures: Failures,
    failed: F,
}

impl<F> CountLayer<F> {
    /// Counts into `failures`, as `failed` classifies each response.
    pub fn new(failures: Failures, failed: F) -> Self {
        Self { failures, failed }
    }
}

impl<S, F: Clone> Layer<S> for CountLayer<F> {
    type Service = Count<S, F>;

    fn layer(&self, inner: S) -> Self::Service {
        Count {
            inner,
            failures: self.failures.clone(),
            failed: self.failed.clone(),
        }
    }
}

/// What [`CountLayer`] makes of a service.
#[derive(Debug, Clone)]
pub struct Count<S, F> {
    inner: S,
    failures: Failures,
    failed: F,
}

impl<S, R, F, C> Service<R> for Count<S, F>
where
    S: Service<R>,
    F: Fn(&Result<S::Response, S::Error>) -> C + Clone,
    C: Into<Counted>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = CountFuture<S::Future, F>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        CountFuture {
            inner: self.inner.call(request),
            failures: self.failures.clone(),
            failed: self.failed.clone(),
        }
    }
}

pin_project! {
    /// The response future of [`Count`]: counts the response when it comes. A request
    /// dropped before its answer counts for nothing.
    #[derive(Debug)]
    pub struct CountFuture<Fut, F> {
        #[pin]
        inner: Fut,
        failures: Failures,
        failed: F,
    }
}

impl<Fut, F, T, E, C> Future for CountFuture<Fut, F>
where
    Fut: Future<Output = Result<T, E>>,
    F: Fn(&Result<T, E>) -> C,
    C: Into<Counted>,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        match (this.failed)(&result).into() {
            Counted::Success => this.failures.record(false),
            Counted::Failure => this.failures.record(true),
            Counted::Skipped => {}
        }
        Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tower::ServiceExt;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn responses_are_counted_by_the_classifier_over_the_window() {
        let failures = Failures::new(Duration::from_secs(10));
        let service = CountLayer::new(
            failures.clone(),
            |r: &Result<u16, Infallible>| matches!(r, Ok(code) if *code >= 500),
        )
        .layer(tower::service_fn(|code: u16| async move { Ok(code) }));
        for code in [200, 500, 503, 200] {
            service.clone().oneshot(code).await.unwrap();
        }
        failures.failure();
        assert_eq!(failures.count(), (3, 4));
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(failures.count(), (0, 0), "out of the window");
    }

    #[tokio::test(start_paused = true)]
    async fn refusals_of_overload_are_neither_failures_nor_requests() {
        use crate::pool::NoCapacity;
        use crate::shed::{Elapsed, QueueFull, QueueTimeout};

        let failures = Failures::new(Duration::from_secs(10));
        let service = CountLayer::new(failures.clone(), errors::<()>).layer(tower::service_fn(
            |error: Option<tower::BoxError>| async move { error.map_or(Ok(()), Err) },
        ));
        for error in [
            None,
            Some(tower::BoxError::from(QueueFull)),
            Some(QueueTimeout.into()),
            Some(Elapsed.into()),
            Some(NoCapacity.into()),
            Some("the database is gone".into()),
        ] {
            let _ = service.clone().oneshot(error).await;
        }
        assert_eq!(failures.count(), (1, 2), "one success, one real failure");
    }

    #[tokio::test(start_paused = true)]
    async fn the_error_rate_is_a_graded_dependency() {
        use status_core::{CheckStatus, Dependency, Registry, Urgency};

        let registry = Registry::new();
        let reporter = registry
            .add_passive(
                Dependency::passive("errors")
                    .urgency(Urgency::None)
                    .build_info()
                    .unwrap(),
            )
            .unwrap();
        let failures = Failures::new(Duration::from_secs(60));
        let _task = failures.report_to(
            reporter,
            Duration::from_secs(1),
            Threshold::at_most(0.01, 0.1, 0.5).unwrap(),
        );
        for i in 0..20 {
            failures.record(i < 5);
        }
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let result = registry.result("errors").unwrap();
        assert_eq!(result.observed_value(), Some(0.25));
        assert_eq!(result.message(), "5 failed of 20 in the last 60 s");
        assert_ne!(result.status(), CheckStatus::Ok);
    }
}
