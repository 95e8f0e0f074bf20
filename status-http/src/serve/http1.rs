//! The HTTP/1 side of the bounded server: one connection served by hyper and axum, closed
//! when shed, past its deadline, or at shutdown once its answer is written.

use std::convert::Infallible;
use std::pin::pin;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use status_serve::{Accepted, Protocol, Timeouts, Tracked, Watched};
use tower::ServiceExt;

use super::body::Deadline;
use super::{Closing, Limits, MAX_HEAD};

/// HTTP/1.1 through the router, for [`status_serve::run`].
#[derive(Clone)]
pub(super) struct Http1 {
    pub(super) router: Router,
    pub(super) limits: Limits,
}

impl Protocol for Http1 {
    async fn serve(self, accepted: Accepted) {
        let Accepted {
            stream,
            remote,
            conn,
            mut closing,
            stats,
            ..
        } = accepted;
        let Self { router, limits } = self;
        let timeouts = Timeouts {
            first: limits.idle_timeout,
            head: Some(limits.header_timeout),
            idle: limits.idle_timeout,
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(Watched::new(stream, Arc::clone(&conn)));
        let service = {
            let conn = Arc::clone(&conn);
            let closing = Closing(closing.clone());
            hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let busy = conn.begin();
                let mut request = if request.body().is_end_stream() {
                    request.map(axum::body::Body::new)
                } else {
                    let deadline = tokio::time::Instant::now() + limits.body_timeout;
                    request.map(|body| axum::body::Body::new(Deadline::new(body, deadline)))
                };
                request.extensions_mut().insert(ConnectInfo(remote));
                request.extensions_mut().insert(closing.clone());
                let response = router.clone().oneshot(request);
                async move {
                    let response = response.await?;
                    Ok::<_, Infallible>(response.map(|body| Tracked::new(body, busy)))
                }
            })
        };
        let mut http = http1::Builder::new();
        http.max_buf_size(MAX_HEAD).header_read_timeout(None);
        let mut served = pin!(http.serve_connection(io, service));
        let mut closing_seen = *closing.borrow();
        if closing_seen {
            served.as_mut().graceful_shutdown();
        }
        loop {
            let look = conn.next_look(timeouts);
            tokio::select! {
                result = served.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(%remote, "connection ended: {e}");
                    }
                    break;
                }
                () = conn.shed() => {
                    tracing::debug!(%remote, "connection shed");
                    break;
                }
                changed = closing.changed(), if !closing_seen => {
                    closing_seen = true;
                    if changed.is_err() || !conn.is_busy() {
                        break;
                    }
                    // Ends the connection once the request in progress is answered.
                    served.as_mut().graceful_shutdown();
                }
                () = tokio::time::sleep_until(look) => {
                    if conn.deadline(timeouts).is_some_and(|at| tokio::time::Instant::now() >= at) {
                        stats.timed_out(conn.spoke());
                        tracing::debug!(%remote, "connection timed out");
                        break;
                    }
                }
            }
        }
    }
}
