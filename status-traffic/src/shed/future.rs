//! The response future of [`Shed`](super::Shed).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tower::BoxError;

/// The response of a [`Shed`](super::Shed): the inner service's, or why it was refused.
pub struct ResponseFuture<T> {
    inner: Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>,
}

impl<T> ResponseFuture<T> {
    pub(super) fn new(future: impl Future<Output = Result<T, BoxError>> + Send + 'static) -> Self {
        Self {
            inner: Box::pin(future),
        }
    }
}

impl<T> Future for ResponseFuture<T> {
    type Output = Result<T, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T> std::fmt::Debug for ResponseFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
