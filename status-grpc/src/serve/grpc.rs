//! The HTTP/2 side of the bounded server: one connection served by hyper and tonic, closed
//! when shed, past its deadline (GOAWAY first when it has spoken), or at shutdown.

use std::convert::Infallible;
use std::pin::pin;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use status_serve::{Accepted, Protocol, Timeouts, Tracked};
use tokio::time::Instant;
use tonic::service::Routes;
use tonic::transport::server::TcpConnectInfo;
use tower::ServiceExt;

use super::Limits;

/// gRPC over HTTP/2, for [`status_serve::run`].
#[derive(Clone)]
pub(super) struct Grpc {
    pub(super) routes: Routes,
    pub(super) limits: Limits,
}

impl Protocol for Grpc {
    async fn serve(self, accepted: Accepted) {
        let Accepted {
            stream,
            remote,
            local,
            conn,
            mut closing,
            stats,
            ..
        } = accepted;
        let Self { routes, limits } = self;
        let timeouts = Timeouts {
            first: limits.handshake_timeout,
            head: None,
            idle: limits.idle_timeout,
        };
        let _ = stream.set_nodelay(true);
        let service = {
            let conn = std::sync::Arc::clone(&conn);
            hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                let busy = conn.begin();
                request.extensions_mut().insert(TcpConnectInfo {
                    local_addr: Some(local),
                    remote_addr: Some(remote),
                });
                let answer = routes.clone().oneshot(request);
                let deadline = limits.request_timeout;
                async move {
                    let response = match tokio::time::timeout(deadline, answer).await {
                        Ok(response) => response?,
                        Err(_) => tonic::Status::deadline_exceeded(format!(
                            "the request did not arrive whole and answered within {deadline:?}"
                        ))
                        .into_http(),
                    };
                    Ok::<_, Infallible>(response.map(|body| Tracked::new(body, busy)))
                }
            })
        };
        let mut http = http2::Builder::new(TokioExecutor::new());
        http.timer(TokioTimer::new())
            .max_concurrent_streams(limits.max_concurrent_streams)
            .keep_alive_interval(limits.keepalive_interval)
            .keep_alive_timeout(limits.keepalive_timeout)
            .max_header_list_size(limits.max_header_list_size);
        let mut served = pin!(http.serve_connection(TokioIo::new(stream), service));
        let mut closing_seen = *closing.borrow();
        if closing_seen {
            served.as_mut().graceful_shutdown();
        }
        // Once told to go away for idleness, how long it may take to say goodbye.
        let mut leaving: Option<Instant> = None;
        loop {
            let look = leaving.unwrap_or_else(|| conn.next_look(timeouts));
            tokio::select! {
                result = served.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(%remote, "gRPC connection ended: {e}");
                    }
                    break;
                }
                () = conn.shed() => {
                    tracing::debug!(%remote, "gRPC connection shed");
                    break;
                }
                changed = closing.changed(), if !closing_seen => {
                    closing_seen = true;
                    if changed.is_err() {
                        break;
                    }
                    served.as_mut().graceful_shutdown();
                }
                () = tokio::time::sleep_until(look) => {
                    if leaving.is_some() {
                        break;
                    }
                    if conn.deadline(timeouts).is_none_or(|at| Instant::now() < at) {
                        continue;
                    }
                    stats.timed_out(conn.spoke());
                    if conn.spoke() {
                        tracing::debug!(%remote, "gRPC connection idle: going away");
                        served.as_mut().graceful_shutdown();
                        leaving = Some(Instant::now() + Duration::from_secs(1));
                    } else {
                        tracing::debug!(%remote, "gRPC connection sent no request in time");
                        break;
                    }
                }
            }
        }
    }
}
