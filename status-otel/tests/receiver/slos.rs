//! The objectives' gauges as a collector receives them (feature `history`): an outage's burn
//! rate, the budget overspent, the page firing, under the dotted names.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use status_core::Registry;
use status_history::History;
use status_otel::{names, Otlp};

use crate::collector::{eventually, Collector};
use crate::export::flipping;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_objective_s_burn_rate_budget_and_alerts_reach_the_collector() {
    let collector = Collector::start().await;
    let registry = Registry::builder().jitter(0.0).build();
    let down = Arc::new(AtomicBool::new(true));
    registry.add(flipping("payments-api", &down)).unwrap();
    let history = History::in_memory()
        .objectives(["pay=dependency:payments-api@99.9/30d".parse().unwrap()])
        .open();
    history.attach(&registry);
    history.restored().await;
    let _otlp = Otlp::builder()
        .endpoint(collector.endpoint())
        .interval(Duration::from_millis(100))
        .dependency(false)
        .objectives(&history)
        .start(&registry)
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The reports the gauges show are the last read together (the beat's, or this one).
    let reports = history.slos().await.unwrap();
    assert!(reports[0].bad_ms > 0, "{:?}", reports[0]);
    let pay = [(names::SLO, "pay")];
    assert!(
        eventually(Duration::from_secs(10), || {
            collector.gauge_f64(
                names::SLO_ALERT_FIRING,
                &[(names::SLO, "pay"), (names::SLO_SEVERITY, "page")],
            ) == Some(1.0)
        })
        .await,
        "the page fires"
    );
    let burn = collector
        .gauge_f64(
            names::SLO_BURN_RATE,
            &[(names::SLO, "pay"), (names::SLO_WINDOW, "5m")],
        )
        .unwrap();
    assert!(burn > 14.4, "{burn}");
    let left = collector
        .gauge_f64(names::SLO_BUDGET_REMAINING, &pay)
        .unwrap();
    assert!(left < 0.0, "{left}");
    assert_eq!(
        collector.gauge_f64(
            names::SLO_ALERT_FIRING,
            &[(names::SLO, "pay"), (names::SLO_SEVERITY, "ticket")]
        ),
        Some(1.0)
    );
}
