//! Checks of real components against real servers, started by the test harness on free
//! loopback ports (`redis-server`, PostgreSQL as a non-root user), and local axum servers.
//!
//! These run on real time: servers really start and stop. Every wait polls with a deadline.
#![cfg(all(
    feature = "redis",
    feature = "postgres",
    feature = "http",
    feature = "net",
    feature = "system"
))]

mod servers;

mod http;
mod net;
mod postgres;
mod redis;
mod system;

use std::time::Duration;

use status_core::check::Check;
use status_core::{CheckResult, Dependency, Registry};

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

/// Whether the count of alive tasks comes back to `baseline` or below within 2 s (an aborted
/// task ends at its next poll, not at once).
async fn tasks_settle_to(baseline: usize) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while alive_tasks() > baseline {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}
