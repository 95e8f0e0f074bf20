//! OpenTelemetry export for `status`: what the registry knows, pushed over OTLP/HTTP
//! (protobuf) to a collector, configured by the `OTEL_*` variables every SDK reads.
//!
//! ```no_run
//! # async fn run(registry: status_core::Registry) -> Result<(), status_otel::Error> {
//! // Exports when OTEL_EXPORTER_OTLP_ENDPOINT (or a signal's own endpoint) is set.
//! let otlp = status_otel::Otlp::start_from_env(&registry)?;
//! # Ok(()) }
//! ```
//!
//! # What is exported
//!
//! | name | kind | unit | attributes |
//! |---|---|---|---|
//! | `status.system.state` | gauge, a state set | | `status.state` (`ok`, `minor`, `major`, `outage`) |
//! | `status.dependency.state` | gauge, a state set | | `status.dependency.id`, `.urgency`, `.kind`, `.groups`; `status.state` |
//! | `status.group.state` | gauge, a state set | | `status.group.name`, `status.state` |
//! | `status.feature.state` | gauge, a state set | | `status.feature.name`, `status.state` (`enabled`, `disabled`) |
//! | `status.dependency.value` | gauge | | `status.dependency.id`: what the latest check measured, where it measures one (latency in ms, a queue's depth, a certificate's expiry in Unix seconds) |
//! | `status.check.duration` | histogram | `s` | `status.dependency.id`, `status.check.outcome` (`ok`, `minor`, `major`, `outage`, `timeout`, `panic`) |
//! | `status.dependency.transitions` | counter | `{transition}` | `status.dependency.id`, `status.state.from`, `status.state.to` |
//! | `dotnet.health_check.reports` | counter, [`dotnet_aliases`](OtlpBuilder::dotnet_aliases) | `{report}` | `dotnet.health_check.status` (`Healthy`, `Degraded`, `Unhealthy`) |
//! | `dotnet.health_check.unhealthy_checks` | counter, [`dotnet_aliases`](OtlpBuilder::dotnet_aliases) | `{check}` | `dotnet.health_check.name`, `dotnet.health_check.status` |
//! | log record `status.transition` | one per transition | | `status.dependency.id`, `status.state.from`, `status.state.to`, `status.message`, `status.causes`, `status.muted`, `status.dependency.urgency`, `status.error` |
//! | span `status.check` | one per check run, [`check_spans`](OtlpBuilder::check_spans) | | `status.dependency.id`, `status.check.outcome`, `status.state` |
//!
//! A state set reports every state, the current one 1 and the others 0, the shape
//! OpenTelemetry recommends for a value with a few states (as `k8s.container.status.state`);
//! there is no semantic convention for health yet (semantic-conventions #1106 is open), so
//! the names are this crate's, lower-case and dotted as the conventions write them.
//!
//! A transition is a change of a dependency's reported status (a change of staleness alone
//! is not one); a dependency's first result is one only when it is not OK. Severity: INFO to
//! OK, WARN to MINOR or MAJOR, ERROR to OUTAGE.
//!
//! **Never per probe.** Nothing here sees a probe request: no span, no log record, no metric
//! per `/healthcheck/*` call, whatever the load balancers do. (Neither does status-http trace
//! its probes into OpenTelemetry; its `tracing` spans stay where the application sends them.)
//!
//! # Never in the way of a check
//!
//! The gauges are read from the registry's current report when the SDK's reader collects
//! (on its own thread, every `OTEL_METRIC_EXPORT_INTERVAL`, 60 s by default). The histogram
//! and counters are recorded in memory by a listener, on the listener thread the registry
//! gives it. Log records and spans go through bounded queues ([`OtlpBuilder::queue`]),
//! sent in batches by threads of their own; what does not fit is dropped and counted
//! ([`OtlpStats`], and in `/metrics` with status-http's `otel` feature). Every request has a
//! deadline (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default), follows no redirect and reads
//! at most 64 KiB back. A collector that is down, slow or hostile costs the checks nothing.
//!
//! The export is a dependency of its own, `otlp-export` (urgency NONE, so it never moves
//! the system): MAJOR while the latest request failed, with the error; opt out with
//! [`OtlpBuilder::dependency`].
//!
//! # Configuration
//!
//! [`Otlp::from_env`] reads what every OpenTelemetry SDK reads: `OTEL_SDK_DISABLED`,
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_{METRICS,LOGS,TRACES}_ENDPOINT`),
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf` only), `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`. What the builder sets wins over the environment.

mod client;
mod gauges;
pub mod names;
mod outbox;
mod recorder;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use opentelemetry::logs::LoggerProvider as _;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::InstrumentationScope;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::logs::{LogBatch, LogExporter as _, SdkLoggerProvider};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SpanExporter as _;
use opentelemetry_sdk::Resource;
use status_core::check::tiered;
use status_core::{CheckStatus, Dependency, Registry, Urgency};

use crate::client::{Client, Counts, Signal};
use crate::outbox::Outbox;
use crate::recorder::{DotnetAliases, Recorder};

/// The id of the dependency that reports the export's own health.
pub const DEPENDENCY_ID: &str = "otlp-export";

/// The default bound of each queue (log records, spans).
pub const DEFAULT_QUEUE: usize = 4096;

/// Why the export could not start.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl Error {
    fn new(what: impl fmt::Display) -> Self {
        Self(what.to_string())
    }
}

/// How to export; see [`Otlp::builder`] and [`Otlp::from_env`].
#[derive(Debug, Clone)]
pub struct OtlpBuilder {
    endpoint: Option<String>,
    interval: Option<Duration>,
    timeout: Option<Duration>,
    queue: usize,
    check_spans: bool,
    dotnet_aliases: bool,
    dependency: bool,
}

/// A running export, cheap to clone; dropping it stops nothing (call
/// [`shutdown`](Self::shutdown) to send what waits and stop).
#[derive(Clone)]
pub struct Otlp {
    inner: Arc<Inner>,
}

struct Inner {
    meters: SdkMeterProvider,
    counts: Arc<Counts>,
    logs: Outbox<recorder::LogItem>,
    spans: Option<Outbox<opentelemetry_sdk::trace::SpanData>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// What the export did so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpStats {
    /// Requests the collector accepted, per signal: metrics, logs, traces.
    pub sent: [u64; 3],
    /// Requests that failed (no answer in time, refused, an error status), per signal.
    pub failed: [u64; 3],
    /// Log records dropped: their queue was full, or their batch was not accepted.
    pub dropped_logs: u64,
    /// Spans dropped: their queue was full, or their batch was not accepted.
    pub dropped_spans: u64,
    /// Log records and spans waiting to be sent.
    pub queued: usize,
    /// The latest failure, in words.
    pub last_error: Option<String>,
}

impl OtlpStats {
    /// The signals in the order [`sent`](Self::sent) and [`failed`](Self::failed) keep them.
    pub const SIGNALS: [&'static str; 3] = ["metrics", "logs", "traces"];
}

impl Otlp {
    /// A builder with nothing set: the endpoint and the rest from the environment.
    #[must_use]
    pub fn builder() -> OtlpBuilder {
        OtlpBuilder {
            endpoint: None,
            interval: None,
            timeout: None,
            queue: DEFAULT_QUEUE,
            check_spans: false,
            dotnet_aliases: false,
            dependency: true,
        }
    }

    /// A builder when the environment asks for an export (an OTLP endpoint is set, for all
    /// signals or for one, and `OTEL_SDK_DISABLED` is not `true`); `None` otherwise.
    #[must_use]
    pub fn from_env() -> Option<OtlpBuilder> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        let disabled =
            std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let endpoint = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|name| set(name));
        (endpoint && !disabled).then(Self::builder)
    }

    /// The one line: starts exporting `registry` when the environment asks for it.
    ///
    /// # Errors
    ///
    /// As [`OtlpBuilder::start`].
    pub fn start_from_env(registry: &Registry) -> Result<Option<Otlp>, Error> {
        Self::from_env().map(|b| b.start(registry)).transpose()
    }

    /// What the export did so far.
    #[must_use]
    pub fn stats(&self) -> OtlpStats {
        let load =
            |a: &[std::sync::atomic::AtomicU64; 3]| [0, 1, 2].map(|i| a[i].load(Ordering::Relaxed));
        OtlpStats {
            sent: load(&self.inner.counts.sent),
            failed: load(&self.inner.counts.failed),
            dropped_logs: self.inner.logs.dropped(),
            dropped_spans: self.inner.spans.as_ref().map_or(0, Outbox::dropped),
            queued: self.inner.logs.queued() + self.inner.spans.as_ref().map_or(0, Outbox::queued),
            last_error: self
                .inner
                .counts
                .last_error
                .lock()
                .ok()
                .and_then(|e| e.clone()),
        }
    }

    /// Collects and sends the metrics now (the reader does every interval on its own).
    ///
    /// # Errors
    ///
    /// When the collection or the request failed.
    pub fn flush_metrics(&self) -> Result<(), Error> {
        self.inner.meters.force_flush().map_err(Error::new)
    }

    /// Sends what waits (each queue's last batch, the metrics once more) and stops; blocks
    /// until then, at most the export timeout per signal. Call it off the runtime's worker
    /// threads (`spawn_blocking`) or at the end of `main`.
    pub fn shutdown(&self) {
        self.inner.logs.close();
        if let Some(spans) = &self.inner.spans {
            spans.close();
        }
        let threads = std::mem::take(
            &mut *self
                .inner
                .threads
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for thread in threads {
            let _ = thread.join();
        }
        if let Err(e) = self.inner.meters.shutdown() {
            tracing::warn!("OTLP metrics at shutdown: {e}");
        }
    }
}

impl fmt::Debug for Otlp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Otlp")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl OtlpBuilder {
    /// The collector's base URL (`http://collector:4318`): each signal goes to its path under
    /// it (`/v1/metrics`, `/v1/logs`, `/v1/traces`). Wins over the environment.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// How often the metrics are collected and sent (else `OTEL_METRIC_EXPORT_INTERVAL`,
    /// 60 s by default).
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self
    }

    /// Each request's deadline (else `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s by default).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The bound of each queue, log records and spans ([`DEFAULT_QUEUE`]).
    #[must_use]
    pub fn queue(mut self, records: usize) -> Self {
        self.queue = records.max(1);
        self
    }

    /// A span per check run (`status.check`), off by default: a trace per check is rarely
    /// worth what it costs the collector.
    #[must_use]
    pub fn check_spans(mut self, on: bool) -> Self {
        self.check_spans = on;
        self
    }

    /// The .NET-shaped counters beside this crate's (`dotnet.health_check.reports`,
    /// `dotnet.health_check.unhealthy_checks`), for dashboards built on them. Off by default.
    #[must_use]
    pub fn dotnet_aliases(mut self, on: bool) -> Self {
        self.dotnet_aliases = on;
        self
    }

    /// Whether the export registers [`DEPENDENCY_ID`], its own health (on by default).
    #[must_use]
    pub fn dependency(mut self, on: bool) -> Self {
        self.dependency = on;
        self
    }

    /// Starts exporting `registry`. Call it inside a Tokio runtime: every request runs on it.
    ///
    /// # Errors
    ///
    /// Outside a runtime; for a protocol other than `http/protobuf`; for an endpoint,
    /// timeout or interval the SDK refuses; when a thread cannot be started; when
    /// [`DEPENDENCY_ID`] is taken.
    pub fn start(self, registry: &Registry) -> Result<Otlp, Error> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::new("the OTLP export starts inside a Tokio runtime"))?;
        for var in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
            "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        ] {
            if let Ok(protocol) = std::env::var(var) {
                if !protocol.trim().is_empty() && protocol.trim() != "http/protobuf" {
                    return Err(Error::new(format!(
                        "{var}={protocol}: only http/protobuf is built in"
                    )));
                }
            }
        }
        let timeout = self.timeout.unwrap_or_else(env_timeout);
        let counts = Arc::new(Counts::default());
        let client = || {
            Client::new(runtime.clone(), timeout, Arc::clone(&counts))
                .map_err(|e| Error::new(format!("the OTLP HTTP client: {e}")))
        };
        let endpoint = |signal: Signal| {
            self.endpoint
                .as_ref()
                .map(|base| format!("{base}/v1/{}", signal.as_str()))
        };
        let resource = Resource::builder().build();
        let scope = InstrumentationScope::builder("status")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();

        let mut metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client()?)
            .with_timeout(timeout);
        if let Some(url) = endpoint(Signal::Metrics) {
            metrics = metrics.with_endpoint(url);
        }
        let metrics = metrics.build().map_err(Error::new)?;
        let mut reader = PeriodicReader::builder(metrics);
        if let Some(interval) = self.interval {
            reader = reader.with_interval(interval);
        }
        let meters = SdkMeterProvider::builder()
            .with_resource(resource.clone())
            .with_reader(reader.build())
            .build();
        let meter = meters.meter_with_scope(scope.clone());
        let weak = registry.downgrade();
        let gauges = gauges::Gauges::register(&meter, &weak);

        let mut threads = Vec::new();
        let mut logs = opentelemetry_otlp::LogExporter::builder()
            .with_http()
            .with_http_client(client()?)
            .with_timeout(timeout);
        if let Some(url) = endpoint(Signal::Logs) {
            logs = logs.with_endpoint(url);
        }
        let mut logs = logs.build().map_err(Error::new)?;
        logs.set_resource(&resource);
        let (log_box, thread) = Outbox::start(
            "status-otlp-logs",
            self.queue,
            move |batch: Vec<recorder::LogItem>| {
                let refs: Vec<_> = batch.iter().map(|(r, s)| (r, s)).collect();
                let sent = futures::executor::block_on(logs.export(LogBatch::new(&refs)));
                if let Err(e) = &sent {
                    tracing::debug!("OTLP logs not sent: {e}");
                }
                sent.is_ok()
            },
        )
        .map_err(|e| Error::new(format!("cannot start the OTLP logs thread: {e}")))?;
        threads.push(thread);

        let span_box = if self.check_spans {
            let mut spans = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client()?)
                .with_timeout(timeout);
            if let Some(url) = endpoint(Signal::Traces) {
                spans = spans.with_endpoint(url);
            }
            let mut spans = spans.build().map_err(Error::new)?;
            spans.set_resource(&resource);
            let (span_box, thread) = Outbox::start("status-otlp-spans", self.queue, move |batch| {
                let sent = futures::executor::block_on(spans.export(batch));
                if let Err(e) = &sent {
                    tracing::debug!("OTLP spans not sent: {e}");
                }
                sent.is_ok()
            })
            .map_err(|e| Error::new(format!("cannot start the OTLP spans thread: {e}")))?;
            threads.push(thread);
            Some(span_box)
        } else {
            None
        };

        let loggers = SdkLoggerProvider::builder().with_resource(resource).build();
        let recorder = Recorder {
            registry: weak,
            durations: meter
                .f64_histogram(names::CHECK_DURATION)
                .with_description("How long each check took, by outcome")
                .with_unit("s")
                .with_boundaries(recorder::duration_buckets())
                .build(),
            transitions: meter
                .u64_counter(names::TRANSITIONS)
                .with_description("Changes of a dependency's reported status")
                .with_unit("{transition}")
                .build(),
            dotnet: self.dotnet_aliases.then(|| DotnetAliases::new(&meter)),
            logger: loggers.logger_with_scope(scope.clone()),
            scope,
            logs: log_box.clone(),
            spans: span_box.clone(),
            ids: Default::default(),
            _gauges: gauges,
        };
        registry
            .add_listener(recorder)
            .map_err(|e| Error::new(format!("cannot listen to the registry: {e}")))?;
        if self.dependency {
            registry
                .add(export_dependency(Arc::clone(&counts))?)
                .map_err(|e| Error::new(format!("cannot register {DEPENDENCY_ID}: {e}")))?;
        }
        Ok(Otlp {
            inner: Arc::new(Inner {
                meters,
                counts,
                logs: log_box,
                spans: span_box,
                threads: Mutex::new(threads),
            }),
        })
    }
}

/// `OTEL_EXPORTER_OTLP_TIMEOUT` in milliseconds, 10 s when unset or unreadable.
fn env_timeout() -> Duration {
    std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// The export's own health: MAJOR while the latest request failed.
fn export_dependency(counts: Arc<Counts>) -> Result<Dependency, Error> {
    let check = tiered(move || {
        let counts = Arc::clone(&counts);
        async move {
            let sent: u64 = counts.sent.iter().map(|c| c.load(Ordering::Relaxed)).sum();
            let failed: u64 = counts
                .failed
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .sum();
            if counts.failing.load(Ordering::Relaxed) {
                let error = counts
                    .last_error
                    .lock()
                    .ok()
                    .and_then(|e| e.clone())
                    .unwrap_or_default();
                (
                    CheckStatus::Major,
                    format!("the latest export failed: {error} ({failed} failed, {sent} sent)"),
                )
            } else {
                (
                    CheckStatus::Ok,
                    format!("{sent} exports sent, {failed} failed"),
                )
            }
        }
    });
    Dependency::builder(DEPENDENCY_ID, check)
        .description("OpenTelemetry export to the OTLP collector")
        .kind("otlp")
        .urgency(Urgency::None)
        .period(Duration::from_secs(10))
        .failures_before_outage(1)
        .build()
        .map_err(Error::new)
}
