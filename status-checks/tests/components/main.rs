//! Checks of real components against real servers, started by the test harness on free
//! loopback ports (`redis-server`, PostgreSQL as a non-root user), and local axum servers.
//!
//! These run on real time: servers really start and stop. Every wait polls with a deadline.
#![cfg(all(
    feature = "redis",
    feature = "etcd",
    feature = "postgres",
    feature = "http",
    feature = "net",
    feature = "system",
    feature = "tls",
    feature = "memcached",
    feature = "nats",
    feature = "mysql",
    feature = "amqp"
))]

// Shared with status-fleet's store tests, which start servers (a cluster) these do not.
#[allow(dead_code)]
mod servers;

mod amqp;
mod etcd;
mod http;
mod memcached;
mod mysql;
mod nats;
mod net;
mod postgres;
mod redis;
mod system;
mod tls;

use std::time::Duration;

use status_core::check::Check;
use status_core::{CheckResult, CheckStatus, Dependency, Registry, TIMED_OUT};

use crate::servers::{Restartable, Silent};

/// A registry with one dependency `id` checked by `check`, never on its own (the test
/// refreshes), reporting every failure at once.
async fn registry_with(check: impl Check, timeout: Duration) -> Registry {
    let registry = Registry::builder().jitter(0.0).build();
    registry
        .add(
            Dependency::builder("dep", check)
                .timeout(timeout)
                .period(Duration::from_secs(3600))
                .failures_before_outage(1)
                .build()
                .unwrap(),
        )
        .unwrap();
    registry.refresh("dep").await.unwrap();
    registry
}

async fn refresh(registry: &Registry) -> std::sync::Arc<CheckResult> {
    registry.refresh("dep").await.unwrap()
}

/// Refreshes until `done`, at most `tries` times: a restarted server may take a moment.
async fn refresh_until(
    registry: &Registry,
    tries: usize,
    done: impl Fn(&CheckResult) -> bool,
) -> std::sync::Arc<CheckResult> {
    let mut last = refresh(registry).await;
    for _ in 1..tries {
        if done(&last) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        last = refresh(registry).await;
    }
    last
}

/// Tasks alive on this runtime.
fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Whether the count of alive tasks comes back to `baseline` or below within 5 s (an aborted
/// task ends at its next poll, not at once).
async fn tasks_settle_to(baseline: usize) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while alive_tasks() > baseline {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// A healthy server is OK (with its latency); stopped, OUTAGE within the timeout with the
/// error chain; started again, OK again.
async fn healthy_stopped_and_restarted(
    server: &mut dyn Restartable,
    check: impl Check,
    healthy: &str,
) {
    let timeout = Duration::from_secs(1);
    let registry = registry_with(check, timeout).await;

    let result = refresh(&registry).await;
    assert_eq!(result.status(), CheckStatus::Ok, "{}", result.message());
    assert!(
        result.message().starts_with(healthy),
        "{}",
        result.message()
    );
    assert!(result.observed_value().is_some_and(|ms| ms >= 0.0));

    server.stop();
    let stopped = refresh(&registry).await;
    assert_eq!(stopped.status(), CheckStatus::Outage);
    assert!(stopped.duration() <= timeout, "{:?}", stopped.duration());
    assert!(stopped.thrown().is_some(), "the error chain is kept");

    server.restart();
    // Up to ten seconds: RabbitMQ restarted on a loaded machine (the test command's binaries
    // in parallel) once refused connections for over two seconds after its port first
    // answered. A server that never comes back still fails here.
    let recovered = refresh_until(&registry, 100, |r| r.status() == CheckStatus::Ok).await;
    assert_eq!(
        recovered.status(),
        CheckStatus::Ok,
        "{}",
        recovered.message()
    );
}

/// Against a server that accepts connections and never answers: OUTAGE on time, every
/// connection closed, no task left behind.
async fn never_answers_without_leaks(silent: &Silent, check: impl Check) {
    let registry = registry_with(check, Duration::from_millis(300)).await;
    assert!(silent.all_closed().await, "the first connection was closed");
    let baseline = alive_tasks();
    three_timeouts(&registry).await;
    assert!(
        silent.all_closed().await,
        "every connection was closed after its timeout"
    );
    assert!(
        tasks_settle_to(baseline).await,
        "no task outlived its check: {} alive, {baseline} before",
        alive_tasks()
    );
}

/// Refreshes three times; each must time out.
async fn three_timeouts(registry: &Registry) {
    for _ in 0..3 {
        let result = refresh(registry).await;
        assert_eq!(result.status(), CheckStatus::Outage);
        assert_eq!(result.message(), TIMED_OUT);
    }
}
