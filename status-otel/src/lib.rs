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
//! | `status.system.state` | UpDownCounter, a state set | | `status.state` (`ok`, `minor`, `major`, `outage`) |
//! | `status.dependency.state` | UpDownCounter, a state set | | `status.dependency.id`, `.urgency`, `.kind`, `.groups`, `service.peer.name`; `status.state` |
//! | `status.group.state` | UpDownCounter, a state set | | `status.group.name`, `status.state` |
//! | `status.feature.state` | UpDownCounter, a state set | | `status.feature.name`, `status.state` (`enabled`, `disabled`) |
//! | `status.dependency.latency` | gauge | `s` | `status.dependency.id`, `service.peer.name`: a duration the latest check measured (a request's latency) |
//! | `status.dependency.timestamp` | gauge | `s` | the same: a moment it measured, in seconds since the Unix epoch (a certificate's expiry) |
//! | `status.dependency.count` | gauge | `{item}` | the same: a count it measured (a queue's depth) |
//! | `status.dependency.ratio` | gauge | `1` | the same: a share from 0 to 1 (a failure ratio; a percentage divided by 100) |
//! | `status.dependency.size` | gauge | `By` | the same: a size in bytes (resident memory) |
//! | `status.dependency.value` | gauge | | the same: a value measured in no unit the check said ([`CheckOutcome::with_value`](status_core::check::CheckOutcome::with_value)), as measured |
//! | `status.check.duration` | histogram | `s` | `status.dependency.id`, `status.check.outcome` (`ok`, `minor`, `major`, `outage`, `timeout`, `panic`) |
//! | `status.dependency.transitions` | counter | `{transition}` | `status.dependency.id`, `status.state.from`, `status.state.to` |
//! | `dotnet.health_check.reports` | counter, [`dotnet_aliases`](OtlpBuilder::dotnet_aliases) | `{report}` | `dotnet.health_check.status` (`Healthy`, `Degraded`, `Unhealthy`) |
//! | `dotnet.health_check.unhealthy_checks` | counter, [`dotnet_aliases`](OtlpBuilder::dotnet_aliases) | `{check}` | `dotnet.health_check.name`, `dotnet.health_check.status` |
//! | log record `status.transition` | one per transition | | `status.dependency.id`, `status.state.from`, `status.state.to`, `status.message`, `status.causes`, `status.muted`, `status.dependency.urgency`, `status.error` |
//! | span `status.check` | one per check run, [`check_spans`](OtlpBuilder::check_spans) | | `status.dependency.id`, `status.check.outcome`, `status.state` |
//!
//! A state set is an UpDownCounter (an OTLP `Sum`, not monotonic, cumulative) reporting
//! every state, the current one 1 and the others 0: how the semantic conventions model a
//! value with a few states (`hw.status`, `k8s.pod.status.phase`). A measured value is
//! exported under the name of what it measures, converted to its canonical unit, when the
//! check says its unit ([`CheckOutcome::with_value_in`](status_core::check::CheckOutcome::with_value_in);
//! the built-in checks do); one metric never mixes milliseconds with queue depths. A
//! dependency that is a remote service (it has a service pool, `DependencyBuilder::service_pool`)
//! carries `service.peer.name` (conventions 1.39) on its state set, its values, its
//! durations, its transitions, its log records and its spans. There is no semantic convention
//! for health yet (semantic-conventions #1106 is open), so the names are this crate's,
//! lower-case and dotted as the conventions write them.
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
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_EXPORTER_OTLP_COMPRESSION`
//! (`gzip`), `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf` only), `OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER` and
//! `OTEL_TRACES_EXPORTER` (`otlp`, or `none` to leave a signal out), `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`. What the builder sets wins over the environment.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod builder;
mod client;
mod env;
mod gauges;
pub mod names;
mod outbox;
mod recorder;
#[cfg(feature = "history")]
mod slos;
mod sync;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use opentelemetry_sdk::metrics::SdkMeterProvider;
use status_core::Registry;

pub use crate::builder::OtlpBuilder;
use crate::client::Counts;
use crate::outbox::Outbox;

/// The id of the dependency that reports the export's own health.
pub const DEPENDENCY_ID: &str = "otlp-export";

/// The default bound of each queue (log records, spans).
pub const DEFAULT_QUEUE: usize = 4096;

/// Why the export could not start, or a flush failed: one opaque error with kinds to ask
/// (`is_*`) and a sentence to show.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorKind {
    NoRuntime,
    Unsupported,
    Invalid,
    Unavailable,
    Conflict,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl Error {
    fn new(kind: ErrorKind, what: impl fmt::Display) -> Self {
        Self {
            kind,
            message: what.to_string(),
        }
    }

    /// Started outside a Tokio runtime.
    #[must_use]
    pub fn is_no_runtime(&self) -> bool {
        self.kind == ErrorKind::NoRuntime
    }

    /// A protocol or an exporter asked for (`OTEL_*`) that is not built in.
    #[must_use]
    pub fn is_unsupported(&self) -> bool {
        self.kind == ErrorKind::Unsupported
    }

    /// An endpoint, timeout or interval the SDK refuses.
    #[must_use]
    pub fn is_invalid(&self) -> bool {
        self.kind == ErrorKind::Invalid
    }

    /// What the export needs could not be had: a thread, the HTTP client, a flush's request.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        self.kind == ErrorKind::Unavailable
    }

    /// The registry refused it: [`DEPENDENCY_ID`] is taken, say.
    #[must_use]
    pub fn is_conflict(&self) -> bool {
        self.kind == ErrorKind::Conflict
    }
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
    logs: Option<Outbox<recorder::LogItem>>,
    spans: Option<Outbox<opentelemetry_sdk::trace::SpanData>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The objectives' gauges, kept as long as the export.
    #[cfg(feature = "history")]
    _slos: Vec<opentelemetry::metrics::ObservableGauge<f64>>,
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
        OtlpBuilder::new()
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
            dropped_logs: self.inner.logs.as_ref().map_or(0, Outbox::dropped),
            dropped_spans: self.inner.spans.as_ref().map_or(0, Outbox::dropped),
            queued: self.inner.logs.as_ref().map_or(0, Outbox::queued)
                + self.inner.spans.as_ref().map_or(0, Outbox::queued),
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
        self.inner
            .meters
            .force_flush()
            .map_err(|e| Error::new(ErrorKind::Unavailable, e))
    }

    /// Sends what waits (each queue's last batch, the metrics once more) and stops; blocks
    /// until then, at most the export timeout per signal. Call it off the runtime's worker
    /// threads (`spawn_blocking`) or at the end of `main`.
    pub fn shutdown(&self) {
        if let Some(logs) = &self.inner.logs {
            logs.close();
        }
        if let Some(spans) = &self.inner.spans {
            spans.close();
        }
        let threads = std::mem::take(&mut *crate::sync::lock(&self.inner.threads));
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
