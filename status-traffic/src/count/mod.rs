//! Counting failures of live traffic: a tower layer that records each response as a success or
//! a failure (by a classifier), a handle the application reports its own failures through,
//! and both as a passive dependency (the error rate) and as the culler's input.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use status_core::check::{CheckOutcome, Threshold};
use status_core::Reporter;
use tokio::time::Instant;
use tower::{Layer, Service};

use crate::cull::FailureWindow;

/// Failures and requests over a sliding window, one slot a second. Cheap to clone: clones
/// share the counts.
#[derive(Debug, Clone)]
pub struct Failures {
    counts: Arc<Mutex<Counts>>,
    window: Duration,
    epoch: Instant,
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
            epoch: Instant::now(),
        }
    }

    /// Records a request that ended, failed or not.
    pub fn record(&self, failed: bool) {
        let now = self.epoch.elapsed();
        let mut counts = self.lock();
        counts.requests.record(now, 1);
        if failed {
            counts.failures.record(now, 1);
        }
    }

    /// Records a failure the application saw (a request counted elsewhere, or none).
    pub fn failure(&self) {
        let now = self.epoch.elapsed();
        self.lock().failures.record(now, 1);
    }

    /// Failures and requests in the window now.
    #[must_use]
    pub fn count(&self) -> (u64, u64) {
        let now = self.epoch.elapsed();
        let counts = self.lock();
        (counts.failures.count(now), counts.requests.count(now))
    }

    /// The window.
    #[must_use]
    pub fn window(&self) -> Duration {
        self.window
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
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
/// classifies it (status-http's `traffic::server_errors` counts errors and 5xx).
#[derive(Debug, Clone)]
pub struct CountLayer<F> {
    failures: Failures,
    failed: F,
}

impl<F> CountLayer<F> {
    /// Counts into `failures`, a response failing when `failed` says so.
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

impl<S, R, F> Service<R> for Count<S, F>
where
    S: Service<R>,
    F: Fn(&Result<S::Response, S::Error>) -> bool + Clone,
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

impl<Fut, F, T, E> Future for CountFuture<Fut, F>
where
    Fut: Future<Output = Result<T, E>>,
    F: Fn(&Result<T, E>) -> bool,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        this.failures.record((this.failed)(&result));
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
        assert_eq!(result.observed_value, Some(0.25));
        assert_eq!(result.message, "5 failed of 20 in the last 60 s");
        assert_ne!(result.status, CheckStatus::Ok);
    }
}
