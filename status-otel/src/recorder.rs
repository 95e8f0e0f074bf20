//! The listener: each check run into the duration histogram (and a span, when asked), each
//! transition into the counter and one log record. It runs on the listener thread the
//! registry gives it; nothing here waits on the network.

use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status as SpanStatus, TraceFlags, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData, SpanEvents, SpanLinks};
use status_core::{CheckResult, CheckStatus, Listener, RunOutcome, WeakRegistry};

use crate::gauges::state;
use crate::names;
use crate::outbox::Outbox;

/// Buckets of the duration histogram, in seconds: 1 ms to about 33 s, as `/metrics` has them.
pub(crate) fn duration_buckets() -> Vec<f64> {
    (0..16).map(|i| 0.001 * f64::from(1u32 << i)).collect()
}

/// A log record waiting to be sent, with its scope.
pub(crate) type LogItem = (SdkLogRecord, InstrumentationScope);

pub(crate) struct Recorder {
    pub(crate) registry: WeakRegistry,
    pub(crate) durations: Histogram<f64>,
    pub(crate) transitions: Counter<u64>,
    pub(crate) dotnet: Option<DotnetAliases>,
    pub(crate) logger: SdkLogger,
    pub(crate) scope: InstrumentationScope,
    pub(crate) logs: Option<Outbox<LogItem>>,
    pub(crate) spans: Option<Outbox<SpanData>>,
    pub(crate) ids: RandomIdGenerator,
    /// Kept as long as the listener: the gauges' callbacks.
    pub(crate) _gauges: crate::gauges::Gauges,
}

/// The .NET-shaped counters, when asked for.
pub(crate) struct DotnetAliases {
    reports: Counter<u64>,
    unhealthy: Counter<u64>,
}

impl DotnetAliases {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            reports: meter
                .u64_counter(names::DOTNET_REPORTS)
                .with_description("Health reports, by the system's status after each check")
                .with_unit("{report}")
                .build(),
            unhealthy: meter
                .u64_counter(names::DOTNET_UNHEALTHY)
                .with_description("Check results that were not healthy, by check")
                .with_unit("{check}")
                .build(),
        }
    }
}

/// .NET's words for a status: `Healthy`, `Degraded` (MINOR or MAJOR), `Unhealthy`.
fn dotnet_status(status: CheckStatus) -> &'static str {
    match status {
        CheckStatus::Ok => "Healthy",
        CheckStatus::Minor | CheckStatus::Major => "Degraded",
        CheckStatus::Outage => "Unhealthy",
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("status_otel::Recorder")
    }
}

impl Listener for Recorder {
    fn on_checked(&self, result: &CheckResult, outcome: RunOutcome) {
        let id = result.id().to_string();
        let mut attributes = crate::gauges::identity(result);
        attributes.push(KeyValue::new(names::CHECK_OUTCOME, outcome.as_str()));
        self.durations
            .record(result.duration().as_secs_f64(), &attributes);
        if let Some(dotnet) = &self.dotnet {
            if let Some(registry) = self.registry.upgrade() {
                dotnet.reports.add(
                    1,
                    &[KeyValue::new(
                        "dotnet.health_check.status",
                        dotnet_status(registry.condition()),
                    )],
                );
            }
            let status = match outcome {
                RunOutcome::Ok => CheckStatus::Ok,
                RunOutcome::Minor => CheckStatus::Minor,
                RunOutcome::Major => CheckStatus::Major,
                _ => CheckStatus::Outage,
            };
            if status != CheckStatus::Ok {
                dotnet.unhealthy.add(
                    1,
                    &[
                        KeyValue::new("dotnet.health_check.name", id.clone()),
                        KeyValue::new("dotnet.health_check.status", dotnet_status(status)),
                    ],
                );
            }
        }
        if let Some(spans) = &self.spans {
            spans.push(self.span(result, outcome, id));
        }
    }

    fn on_changed(&self, previous: Option<CheckStatus>, current: &CheckResult) {
        let to = current.status();
        // A change of staleness alone is not a transition; a first result is one only when
        // it is not OK (a dependency that starts healthy has nothing to say).
        match previous {
            Some(from) if from == to => return,
            None if to == CheckStatus::Ok => return,
            _ => {}
        }
        let from = previous.map_or("unknown", state);
        let mut attributes = crate::gauges::identity(current);
        attributes.extend([
            KeyValue::new(names::FROM, from),
            KeyValue::new(names::TO, state(to)),
        ]);
        self.transitions.add(1, &attributes);
        if let Some(logs) = &self.logs {
            logs.push((self.record(from, current), self.scope.clone()));
        }
    }
}

impl Recorder {
    /// The log record of a transition.
    fn record(&self, from: &'static str, current: &CheckResult) -> SdkLogRecord {
        let to = current.status();
        let mut record = self.logger.create_log_record();
        let at: SystemTime = current.timestamp().into();
        record.set_event_name(names::TRANSITION_EVENT);
        record.set_timestamp(at);
        record.set_observed_timestamp(SystemTime::now());
        let (number, text) = match to {
            CheckStatus::Ok => (Severity::Info, "INFO"),
            CheckStatus::Minor | CheckStatus::Major => (Severity::Warn, "WARN"),
            CheckStatus::Outage => (Severity::Error, "ERROR"),
        };
        record.set_severity_number(number);
        record.set_severity_text(text);
        record.set_body(AnyValue::from(format!(
            "{} {} (was {}): {}",
            current.id(),
            to,
            from.to_uppercase(),
            current.message()
        )));
        let causes: Vec<String> = current
            .blocked_by()
            .iter()
            .map(ToString::to_string)
            .collect();
        record.add_attributes([
            (
                names::DEPENDENCY_ID,
                AnyValue::from(current.id().to_string()),
            ),
            (names::FROM, AnyValue::from(from)),
            (names::TO, AnyValue::from(state(to))),
            (names::MESSAGE, AnyValue::from(current.message().to_owned())),
            (names::CAUSES, AnyValue::from(causes.join(","))),
            (names::MUTED, AnyValue::from(current.mute().is_some())),
            (
                names::DEPENDENCY_URGENCY,
                AnyValue::from(current.urgency().as_str()),
            ),
        ]);
        if !current.service_pool().is_empty() {
            record.add_attribute(names::SERVICE_PEER_NAME, current.service_pool().to_owned());
        }
        if let Some(error) = current.thrown() {
            let mut chain = error.message().to_owned();
            for cause in error.causes() {
                chain.push_str(": ");
                chain.push_str(cause);
            }
            record.add_attribute(names::ERROR, chain);
        }
        record
    }

    /// The span of one check run: it ended at the result's time and lasted its duration.
    fn span(&self, result: &CheckResult, outcome: RunOutcome, id: String) -> SpanData {
        let end: SystemTime = result.timestamp().into();
        let start = end
            .checked_sub(result.duration())
            .unwrap_or(end - Duration::ZERO);
        let status = match outcome {
            RunOutcome::Ok | RunOutcome::Minor => SpanStatus::Ok,
            _ => SpanStatus::error(result.message().to_owned()),
        };
        SpanData {
            span_context: SpanContext::new(
                self.ids.new_trace_id(),
                self.ids.new_span_id(),
                TraceFlags::SAMPLED,
                false,
                TraceState::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: Cow::Borrowed(names::CHECK_SPAN),
            start_time: start,
            end_time: end,
            attributes: {
                let mut attributes = vec![
                    KeyValue::new(names::DEPENDENCY_ID, id),
                    KeyValue::new(names::CHECK_OUTCOME, outcome.as_str()),
                    KeyValue::new(names::STATE, state(result.status())),
                ];
                if !result.service_pool().is_empty() {
                    attributes.push(KeyValue::new(
                        names::SERVICE_PEER_NAME,
                        result.service_pool().to_owned(),
                    ));
                }
                attributes
            },
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        }
    }
}
