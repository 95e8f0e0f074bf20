use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use status_core::check::{tiered, CheckOutcome, Unit};
use status_core::{
    CheckResult, CheckStatus, Dependency, Group, Listener, Registry, RunOutcome, Urgency,
};
use status_otel::{names, Otlp};
use tower::ServiceExt;

use crate::collector::{attribute, eventually, Collector};

/// A dependency whose check answers OUTAGE while `down` is set.
pub(crate) fn flipping(id: &str, down: &Arc<AtomicBool>) -> Dependency {
    let down = Arc::clone(down);
    Dependency::builder(
        id,
        tiered(move || {
            let down = down.load(Ordering::Relaxed);
            async move {
                if down {
                    (CheckStatus::Outage, "chaos: connection refused")
                } else {
                    (CheckStatus::Ok, "fine")
                }
            }
        }),
    )
    .urgency(Urgency::Required)
    .kind("chaos")
    .period(Duration::from_millis(50))
    .failures_before_outage(1)
    .successes_before_recovery(1)
    .build()
    .unwrap()
}

/// A change of status: from, to.
pub(crate) type Change = (Option<CheckStatus>, CheckStatus);

/// Counts check runs, and keeps a dependency's changes of status, as the registry reports
/// them, independently of the export.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    pub(crate) runs: Arc<AtomicU64>,
    pub(crate) changes: Arc<Mutex<Vec<Change>>>,
}

impl Listener for Runs {
    fn on_checked(&self, _: &CheckResult, _: RunOutcome) {
        self.runs.fetch_add(1, Ordering::Relaxed);
    }

    fn on_changed(&self, previous: Option<CheckStatus>, current: &CheckResult) {
        if previous.is_some_and(|p| p != current.status()) {
            self.changes
                .lock()
                .unwrap()
                .push((previous, current.status()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chaos_outage_moves_the_gauges_and_writes_one_record_per_transition() {
    let collector = Collector::start().await;
    let registry = Registry::builder().jitter(0.0).build();
    let down = Arc::new(AtomicBool::new(false));
    let seen = Runs::default();
    let runs = Arc::clone(&seen.runs);
    let changes = Arc::clone(&seen.changes);
    registry.add_listener(seen).unwrap();
    registry.add(flipping("payments-api", &down)).unwrap();
    registry
        .add_group(
            Group::builder("payments")
                .dependency("payments-api")
                .build()
                .unwrap(),
        )
        .unwrap();
    let otlp = Otlp::builder()
        .endpoint(collector.endpoint())
        .interval(Duration::from_millis(100))
        .check_spans(true)
        .dotnet_aliases(true)
        .start(&registry)
        .unwrap();

    let state = |s: &'static str| {
        let c = collector.clone();
        move || {
            c.state(
                names::DEPENDENCY_STATE,
                &[
                    (names::DEPENDENCY_ID, "payments-api"),
                    (names::STATE, s),
                    (names::DEPENDENCY_URGENCY, "REQUIRED"),
                    (names::DEPENDENCY_KIND, "chaos"),
                    (names::DEPENDENCY_GROUPS, "payments"),
                ],
            ) == Some(1)
        }
    };
    assert!(eventually(Duration::from_secs(10), state("ok")).await);
    assert_eq!(
        collector.states(
            names::DEPENDENCY_STATE,
            &[(names::DEPENDENCY_ID, "payments-api")]
        ),
        [("major", 0), ("minor", 0), ("ok", 1), ("outage", 0)].map(|(s, v)| (s.to_owned(), v)),
        "every state is reported, the current one 1, as a non-monotonic sum"
    );
    assert_eq!(
        collector.states(names::SYSTEM_STATE, &[]).len(),
        4,
        "the system's state set too"
    );

    // The chaos outage, then the recovery.
    down.store(true, Ordering::Relaxed);
    assert!(eventually(Duration::from_secs(10), state("outage")).await);
    assert_eq!(
        collector.state(names::SYSTEM_STATE, &[(names::STATE, "outage")]),
        Some(1)
    );
    assert_eq!(
        collector.state(
            names::GROUP_STATE,
            &[(names::GROUP_NAME, "payments"), (names::STATE, "outage")]
        ),
        Some(1)
    );
    down.store(false, Ordering::Relaxed);
    assert!(eventually(Duration::from_secs(10), state("ok")).await);
    assert_eq!(
        collector.state(names::SYSTEM_STATE, &[(names::STATE, "ok")]),
        Some(1)
    );

    // 10,000 probe requests, of every kind: none is a span, a record or a check.
    let app = status_http::Routes::new(&registry).build();
    let spans_before = collector.received.lock().unwrap().spans.len();
    let runs_before = runs.load(Ordering::Relaxed);
    for i in 0..10_000 {
        let path = ["/healthcheck", "/healthcheck/live", "/healthcheck/ready"][i % 3];
        let response = app
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert!(response.status().is_success() || response.status().as_u16() == 503);
    }
    let runs_during = runs.load(Ordering::Relaxed) - runs_before;

    registry.remove("payments-api").unwrap();
    registry.remove(status_otel::DEPENDENCY_ID).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    tokio::task::spawn_blocking({
        let collector = collector.clone();
        move || {
            otlp.flush_metrics().unwrap();
            otlp.shutdown();
            assert_eq!(otlp.stats().dropped_logs, 0);
            assert_eq!(otlp.stats().dropped_spans, 0);
            drop(collector);
        }
    })
    .await
    .unwrap();

    // Exactly one record per transition the registry announced.
    assert_eq!(
        *changes.lock().unwrap(),
        vec![
            (Some(CheckStatus::Ok), CheckStatus::Outage),
            (Some(CheckStatus::Outage), CheckStatus::Ok)
        ],
        "the registry saw one outage and one recovery"
    );
    let received = collector.received.lock().unwrap();
    let records: Vec<_> = received
        .logs
        .iter()
        .filter(|r| {
            attribute(&r.attributes, names::DEPENDENCY_ID).as_deref() == Some("payments-api")
        })
        .collect();
    assert_eq!(
        records.len(),
        2,
        "one record per transition, never per probe or per check"
    );
    assert_eq!(records[0].event_name, names::TRANSITION_EVENT);
    assert_eq!(
        attribute(&records[0].attributes, names::FROM).as_deref(),
        Some("ok")
    );
    assert_eq!(
        attribute(&records[0].attributes, names::TO).as_deref(),
        Some("outage")
    );
    assert_eq!(
        attribute(&records[0].attributes, names::MESSAGE).as_deref(),
        Some("chaos: connection refused")
    );
    assert_eq!(
        attribute(&records[0].attributes, names::MUTED).as_deref(),
        Some("false")
    );
    assert_eq!(records[0].severity_text, "ERROR");
    assert_eq!(
        attribute(&records[1].attributes, names::TO).as_deref(),
        Some("ok")
    );
    assert_eq!(records[1].severity_text, "INFO");
    drop(received);

    assert_eq!(
        collector.sum(
            names::TRANSITIONS,
            &[(names::DEPENDENCY_ID, "payments-api")]
        ),
        Some(2)
    );
    assert_eq!(
        collector.sum(
            names::TRANSITIONS,
            &[
                (names::DEPENDENCY_ID, "payments-api"),
                (names::TO, "outage")
            ]
        ),
        Some(1)
    );
    let histogram_runs = collector
        .histogram_count(
            names::CHECK_DURATION,
            &[(names::DEPENDENCY_ID, "payments-api")],
        )
        .unwrap();
    assert!(
        histogram_runs >= 3,
        "{histogram_runs} runs in the histogram"
    );
    assert!(
        collector
            .histogram_count(
                names::CHECK_DURATION,
                &[
                    (names::DEPENDENCY_ID, "payments-api"),
                    (names::CHECK_OUTCOME, "outage")
                ]
            )
            .unwrap()
            >= 1
    );
    assert!(
        collector
            .sum(
                names::DOTNET_UNHEALTHY,
                &[("dotnet.health_check.name", "payments-api")]
            )
            .unwrap()
            >= 1
    );

    // A span per check run, none per probe: during the 10,000 probes only the checks that ran
    // meanwhile (every 50 ms) added spans.
    let received = collector.received.lock().unwrap();
    let spans = received
        .spans
        .iter()
        .filter(|s| s.name == names::CHECK_SPAN)
        .count();
    assert_eq!(spans, received.spans.len(), "no span but the checks'");
    let all_runs = runs.load(Ordering::Relaxed);
    assert!(
        spans as u64 <= all_runs && spans as u64 + 2 >= all_runs,
        "{spans} spans for {all_runs} check runs"
    );
    let spans_during = received.spans.len() - spans_before;
    assert!(
        (spans_during as u64) < runs_during + 50 && spans_during < 1000,
        "{spans_during} spans while 10,000 probes ran ({runs_during} checks)"
    );
    assert!(
        attribute(&received.resource, "service.name").is_some(),
        "the resource names the service"
    );
}

/// The one line, configured as every OpenTelemetry SDK is: the endpoint, the interval and
/// the resource from `OTEL_*` (the only test here that sets them; the others' builders win).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_configures_the_export_and_no_span_is_sent_unless_asked() {
    let collector = Collector::start().await;
    let registry = Registry::builder().jitter(0.0).build();
    let down = Arc::new(AtomicBool::new(false));
    registry.add(flipping("cache", &down)).unwrap();
    let depth = status_core::check::Threshold::at_most(100.0, 1_000.0, 10_000.0).unwrap();
    registry
        .add(
            Dependency::builder(
                "queue",
                status_core::check::threshold(depth, || async { Ok::<_, std::io::Error>(42.5) }),
            )
            .build()
            .unwrap(),
        )
        .unwrap();
    let measured = |id: &str, value: f64, unit: Unit| {
        Dependency::builder(
            id,
            tiered(move || async move {
                CheckOutcome::new(CheckStatus::Ok, "measured").with_value_in(value, unit)
            }),
        )
    };
    registry
        .add(
            measured("payments", 12.5, Unit::Milliseconds)
                .service_pool("payments-service")
                .build()
                .unwrap(),
        )
        .unwrap();
    for (id, value, unit) in [
        ("certificate", 1_900_000_000.0, Unit::UnixSeconds),
        ("backlog", 7.0, Unit::Count),
        ("disk", 25.0, Unit::Percent),
    ] {
        registry
            .add(measured(id, value, unit).build().unwrap())
            .unwrap();
    }
    assert!(
        Otlp::start_from_env(&registry).unwrap().is_none(),
        "nothing set, nothing exported"
    );
    std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint());
    std::env::set_var("OTEL_METRIC_EXPORT_INTERVAL", "100");
    std::env::set_var("OTEL_SERVICE_NAME", "checkout");
    std::env::set_var(
        "OTEL_RESOURCE_ATTRIBUTES",
        "deployment.environment.name=test",
    );
    std::env::set_var("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip");
    let otlp = Otlp::start_from_env(&registry)
        .unwrap()
        .expect("an endpoint is set");
    // Ten exports in about a second: the interval is the environment's, not the default 60 s.
    assert!(eventually(Duration::from_secs(5), || collector.metric_requests() >= 10).await);
    tokio::task::spawn_blocking(move || otlp.shutdown())
        .await
        .unwrap();
    assert_eq!(
        collector.gauge_f64(names::DEPENDENCY_VALUE, &[(names::DEPENDENCY_ID, "queue")]),
        Some(42.5),
        "a measured value is a gauge"
    );
    assert_eq!(
        collector.gauge_f64(names::DEPENDENCY_VALUE, &[(names::DEPENDENCY_ID, "cache")]),
        None,
        "a dependency that measures nothing has no value"
    );
    // Values whose check said its unit: one metric per quantity, in its canonical unit.
    let latency = collector.gauge_f64(
        names::DEPENDENCY_LATENCY,
        &[(names::DEPENDENCY_ID, "payments")],
    );
    assert!(
        latency.is_some_and(|s| (s - 0.0125).abs() < 1e-9),
        "{latency:?}: 12.5 ms in seconds"
    );
    assert_eq!(
        collector.unit(names::DEPENDENCY_LATENCY).as_deref(),
        Some("s")
    );
    assert_eq!(
        collector.gauge_f64(
            names::DEPENDENCY_TIMESTAMP,
            &[(names::DEPENDENCY_ID, "certificate")]
        ),
        Some(1_900_000_000.0)
    );
    assert_eq!(
        collector.unit(names::DEPENDENCY_TIMESTAMP).as_deref(),
        Some("s")
    );
    assert_eq!(
        collector.gauge_f64(
            names::DEPENDENCY_COUNT,
            &[(names::DEPENDENCY_ID, "backlog")]
        ),
        Some(7.0)
    );
    assert_eq!(
        collector.unit(names::DEPENDENCY_COUNT).as_deref(),
        Some("{item}")
    );
    assert_eq!(
        collector.gauge_f64(names::DEPENDENCY_RATIO, &[(names::DEPENDENCY_ID, "disk")]),
        Some(0.25),
        "25 % as a share"
    );
    assert_eq!(
        collector.unit(names::DEPENDENCY_RATIO).as_deref(),
        Some("1")
    );
    assert_eq!(
        collector.gauge_f64(
            names::DEPENDENCY_VALUE,
            &[(names::DEPENDENCY_ID, "payments")]
        ),
        None,
        "a value with a unit is not also exported without one"
    );
    // A remote service carries `service.peer.name`, on its state set and its values alike.
    let peer = [
        (names::DEPENDENCY_ID, "payments"),
        (names::SERVICE_PEER_NAME, "payments-service"),
    ];
    assert!(collector
        .gauge_attributes(names::DEPENDENCY_LATENCY, &peer)
        .is_some());
    assert_eq!(collector.states(names::DEPENDENCY_STATE, &peer).len(), 4);
    let cache = collector
        .gauge_attributes(names::DEPENDENCY_VALUE, &[(names::DEPENDENCY_ID, "queue")])
        .unwrap();
    assert_eq!(
        attribute(&cache, names::SERVICE_PEER_NAME),
        None,
        "not a remote service"
    );
    let received = collector.received.lock().unwrap();
    assert_eq!(
        attribute(&received.resource, "service.name").as_deref(),
        Some("checkout")
    );
    assert_eq!(
        attribute(&received.resource, "deployment.environment.name").as_deref(),
        Some("test")
    );
    assert!(received.spans.is_empty(), "{} spans", received.spans.len());
    assert!(received.logs.is_empty(), "nothing changed, nothing logged");
    assert!(
        received.gzipped >= 10,
        "gzip as OTEL_EXPORTER_OTLP_COMPRESSION asks"
    );
}
