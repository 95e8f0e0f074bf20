//! `OTEL_*_EXPORTER` leaves a signal out (`none`) or is refused (an exporter this crate does
//! not have). A process of its own: these set variables the other tests must not see.

#[path = "receiver/collector.rs"]
#[allow(dead_code)]
mod collector;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use status_core::check::tiered;
use status_core::{CheckStatus, Dependency, Registry};
use status_otel::{names, Otlp};

use crate::collector::{eventually, Collector};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn none_leaves_a_signal_out_and_an_unknown_exporter_is_refused() {
    let collector = Collector::start().await;
    let registry = Registry::builder().jitter(0.0).build();
    let down = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&down);
    registry
        .add(
            Dependency::builder(
                "db",
                tiered(move || {
                    let down = flag.load(Ordering::Relaxed);
                    async move {
                        if down {
                            (CheckStatus::Outage, "down")
                        } else {
                            (CheckStatus::Ok, "up")
                        }
                    }
                }),
            )
            .period(Duration::from_millis(50))
            .failures_before_outage(1)
            .build()
            .unwrap(),
        )
        .unwrap();

    std::env::set_var("OTEL_METRICS_EXPORTER", "console");
    let refused = Otlp::builder()
        .endpoint(collector.endpoint())
        .start(&registry)
        .unwrap_err();
    assert!(
        refused.to_string().contains("only otlp (or none)"),
        "{refused}"
    );
    assert!(
        refused.is_unsupported() && !refused.is_invalid(),
        "{refused:?}"
    );

    std::env::set_var("OTEL_METRICS_EXPORTER", "otlp");
    std::env::set_var("OTEL_LOGS_EXPORTER", "none");
    std::env::set_var("OTEL_TRACES_EXPORTER", "none");
    let otlp = Otlp::builder()
        .endpoint(collector.endpoint())
        .interval(Duration::from_millis(100))
        .check_spans(true)
        .dependency(false)
        .start(&registry)
        .unwrap();
    down.store(true, Ordering::Relaxed);
    let outage = || {
        collector.state(
            names::DEPENDENCY_STATE,
            &[(names::DEPENDENCY_ID, "db"), (names::STATE, "outage")],
        ) == Some(1)
    };
    assert!(eventually(Duration::from_secs(10), outage).await);
    down.store(false, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::spawn_blocking(move || otlp.shutdown())
        .await
        .unwrap();
    let received = collector.received.lock().unwrap();
    assert!(received.logs.is_empty(), "OTEL_LOGS_EXPORTER=none");
    assert!(received.spans.is_empty(), "OTEL_TRACES_EXPORTER=none");
}
