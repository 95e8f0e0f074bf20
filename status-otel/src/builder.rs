//! [`OtlpBuilder`]: how to export, and starting it.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
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
use crate::env::{env_timeout, exporter_wanted, refused_headers};
use crate::outbox::Outbox;
use crate::recorder::{self, DotnetAliases, Recorder};
use crate::{gauges, names, Error, ErrorKind, Inner, Otlp, DEPENDENCY_ID};

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
    #[cfg(feature = "history")]
    objectives: Option<status_history::History>,
}

impl OtlpBuilder {
    /// Nothing set: the endpoint and the rest from the environment.
    pub(crate) fn new() -> Self {
        Self {
            endpoint: None,
            interval: None,
            timeout: None,
            queue: crate::DEFAULT_QUEUE,
            check_spans: false,
            dotnet_aliases: false,
            dependency: true,
            #[cfg(feature = "history")]
            objectives: None,
        }
    }

    /// Exports the objectives of `history` too (`status.slo.burn_rate`,
    /// `status.slo.error_budget.remaining_ratio`, `status.slo.alert.firing`), from their last
    /// reports (read every 15 s).
    #[cfg(feature = "history")]
    #[cfg_attr(docsrs, doc(cfg(feature = "history")))]
    #[must_use]
    pub fn objectives(mut self, history: &status_history::History) -> Self {
        self.objectives = Some(history.clone());
        self
    }

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

    /// The bound of each queue, log records and spans ([`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE)).
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
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            Error::new(
                ErrorKind::NoRuntime,
                "the OTLP export starts inside a Tokio runtime",
            )
        })?;
        for var in [
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
            "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        ] {
            if let Ok(protocol) = std::env::var(var) {
                if !protocol.trim().is_empty() && protocol.trim() != "http/protobuf" {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!("{var}={protocol}: only http/protobuf is built in"),
                    ));
                }
            }
        }
        // The OTLP exporter drops a header it cannot send without a word: say so, once, by
        // name (a value may be a secret).
        for var in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
            "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Ok(value) = std::env::var(var) {
                for name in refused_headers(&value) {
                    tracing::warn!(
                        variable = var,
                        header = %name,
                        "an OTLP header cannot be sent (a name or value that is not one: \
                         control characters, line breaks): it is left out of every request"
                    );
                }
            }
        }
        let send_metrics = exporter_wanted("OTEL_METRICS_EXPORTER")?;
        let send_logs = exporter_wanted("OTEL_LOGS_EXPORTER")?;
        let send_spans = self.check_spans && exporter_wanted("OTEL_TRACES_EXPORTER")?;
        let timeout = self.timeout.unwrap_or_else(env_timeout);
        let counts = Arc::new(Counts::default());
        let client = || {
            Client::new(runtime.clone(), timeout, Arc::clone(&counts)).map_err(|e| {
                Error::new(ErrorKind::Unavailable, format!("the OTLP HTTP client: {e}"))
            })
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

        let mut meters = SdkMeterProvider::builder().with_resource(resource.clone());
        if send_metrics {
            let mut metrics = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_http_client(client()?)
                .with_timeout(timeout);
            if let Some(url) = endpoint(Signal::Metrics) {
                metrics = metrics.with_endpoint(url);
            }
            let metrics = metrics
                .build()
                .map_err(|e| Error::new(ErrorKind::Invalid, e))?;
            let mut reader = PeriodicReader::builder(metrics);
            if let Some(interval) = self.interval {
                reader = reader.with_interval(interval);
            }
            meters = meters.with_reader(reader.build());
        }
        let meters = meters.build();
        let meter = meters.meter_with_scope(scope.clone());
        let weak = registry.downgrade();
        let gauges = gauges::Gauges::register(&meter, &weak);
        #[cfg(feature = "history")]
        let slo_gauges = self
            .objectives
            .as_ref()
            .map(|h| crate::slos::register(&meter, h))
            .unwrap_or_default();

        let mut threads = Vec::new();
        let log_box = if send_logs {
            let mut logs = opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_http_client(client()?)
                .with_timeout(timeout);
            if let Some(url) = endpoint(Signal::Logs) {
                logs = logs.with_endpoint(url);
            }
            let mut logs = logs
                .build()
                .map_err(|e| Error::new(ErrorKind::Invalid, e))?;
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
            .map_err(|e| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!("cannot start the OTLP logs thread: {e}"),
                )
            })?;
            threads.push(thread);
            Some(log_box)
        } else {
            None
        };

        let span_box = if send_spans {
            let mut spans = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client()?)
                .with_timeout(timeout);
            if let Some(url) = endpoint(Signal::Traces) {
                spans = spans.with_endpoint(url);
            }
            let mut spans = spans
                .build()
                .map_err(|e| Error::new(ErrorKind::Invalid, e))?;
            spans.set_resource(&resource);
            let (span_box, thread) = Outbox::start("status-otlp-spans", self.queue, move |batch| {
                let sent = futures::executor::block_on(spans.export(batch));
                if let Err(e) = &sent {
                    tracing::debug!("OTLP spans not sent: {e}");
                }
                sent.is_ok()
            })
            .map_err(|e| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!("cannot start the OTLP spans thread: {e}"),
                )
            })?;
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
        registry.add_listener(recorder).map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("cannot listen to the registry: {e}"),
            )
        })?;
        if self.dependency {
            registry
                .add(export_dependency(Arc::clone(&counts))?)
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Conflict,
                        format!("cannot register {DEPENDENCY_ID}: {e}"),
                    )
                })?;
        }
        Ok(Otlp {
            inner: Arc::new(Inner {
                meters,
                counts,
                logs: log_box,
                spans: span_box,
                threads: Mutex::new(threads),
                #[cfg(feature = "history")]
                _slos: slo_gauges,
            }),
        })
    }
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
            } else if sent == 0 && failed == 0 {
                (CheckStatus::Ok, "no export yet".to_owned())
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
        .map_err(|e| Error::new(ErrorKind::Invalid, e))
}
