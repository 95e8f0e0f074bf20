//! Graceful shutdown: fail readiness first, then stop.

use std::future::Future;
use std::time::Duration;

use status_core::{HoldSource, Registry};

/// Resolves on Ctrl-C, or SIGTERM on Unix.
pub async fn signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// When `trigger` resolves, takes `registry` out of rotation with a
/// [`HoldSource::Shutdown`] hold (readiness and summary answer 503 from then on, liveness
/// still 200), waits `delay` so balancers notice and stop sending, then resolves.
///
/// No admin call can put the instance back: an operator's undrain ends the operator's hold
/// only, and an operator's short drain does not shorten this one.
///
/// Pass it to [`axum::serve()`]'s `with_graceful_shutdown`, which then lets in-flight requests
/// finish.
pub fn drain_then<F: Future<Output = ()>>(
    registry: &Registry,
    delay: Duration,
    trigger: F,
) -> impl Future<Output = ()> {
    let registry = registry.clone();
    drain(registry, delay, trigger)
}

async fn drain<F: Future<Output = ()>>(registry: Registry, delay: Duration, trigger: F) {
    trigger.await;
    if let Err(e) = registry.hold(HoldSource::Shutdown, "shutting down", None, None) {
        tracing::error!("cannot drain before shutdown: {e}");
    }
    tracing::info!(
        delay_ms = delay.as_millis(),
        "shutting down: readiness fails, waiting for balancers"
    );
    tokio::time::sleep(delay).await;
    tracing::info!("shutting down: finishing in-flight requests");
}

/// [`drain_then`] on Ctrl-C or SIGTERM.
///
/// # Example
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// use std::time::Duration;
/// use status_core::{HoldSource, Registry};
///
/// let registry = Registry::new();
/// let app = status_http::routes(&registry);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, app)
///     .with_graceful_shutdown(status_http::shutdown::graceful(&registry, Duration::from_secs(5)))
///     .await
/// # }
/// ```
pub fn graceful(registry: &Registry, delay: Duration) -> impl Future<Output = ()> + Send + 'static {
    drain(registry.clone(), delay, signal())
}
