//! The response future of the gates.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::http::HeaderValue;
use axum::response::Response;
use pin_project_lite::pin_project;

use super::X_STATUS_CONDITION;

pin_project! {
    /// The response of a gate: the inner service's, or the gate's own rejection.
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Inner {
            #[pin]
            future: F,
            mark: Option<HeaderValue>,
        },
        Rejected {
            response: Option<Response>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn inner(future: F, mark: Option<HeaderValue>) -> Self {
        Self {
            kind: Kind::Inner { future, mark },
        }
    }

    pub(crate) fn rejected(response: Response) -> Self {
        Self {
            kind: Kind::Rejected {
                response: Some(response),
            },
        }
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Inner { future, mark } => {
                let mut response = ready!(future.poll(cx))?;
                if let Some(mark) = mark.take() {
                    response.headers_mut().insert(X_STATUS_CONDITION, mark);
                }
                Poll::Ready(Ok(response))
            }
            KindProj::Rejected { response } => Poll::Ready(Ok(response
                .take()
                .expect("ResponseFuture polled after completion"))),
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
