//! `/metrics`: Prometheus exposition written by `prometheus-client`.

use std::fmt;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry as MetricRegistry, Unit};
use status_core::{
    CheckResult, DependencyId, DependencyInfo, HoldSource, Listener, Registry, RunOutcome,
};

use crate::error::ApiError;
use crate::sync::lock;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IdLabel {
    id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    id: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabel {
    group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FeatureLabel {
    feature: String,
}

fn duration_histogram() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// Registers more metrics beside the engine's; see `Routes::register_metrics`.
pub(crate) type MetricsHook = Box<dyn FnOnce(&mut MetricRegistry) + Send>;

/// The metric families, shared by the scrape handler and the listener feeding them.
/// What `/metrics` reads: the registry's report and the families kept beside it.
#[derive(Debug)]
pub(crate) struct MetricsState {
    pub(crate) registry: Registry,
    pub(crate) metrics: Metrics,
}

pub(crate) struct Metrics {
    families: Arc<Families>,
    /// One scrape at a time: gauges are rewritten from the report on each.
    scrape: Mutex<MetricRegistry>,
}

struct Families {
    system: Gauge,
    dependency: Family<IdLabel, Gauge>,
    values: Family<IdLabel, Gauge<f64, AtomicU64>>,
    durations: Family<IdLabel, Histogram, fn() -> Histogram>,
    checks: Family<CheckLabels, Counter>,
    features: Family<FeatureLabel, Gauge>,
    holds: Family<SourceLabel, Gauge>,
    groups: Family<GroupLabel, Gauge>,
}

impl Metrics {
    /// Metrics for `registry`, fed by a listener registered on it, and whatever `hooks`
    /// register beside them.
    pub(crate) fn new(registry: &Registry, hooks: Vec<MetricsHook>) -> Self {
        let families = Arc::new(Families {
            system: Gauge::default(),
            dependency: Family::default(),
            values: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            checks: Family::default(),
            features: Family::default(),
            holds: Family::default(),
            groups: Family::default(),
        });
        let mut metrics = MetricRegistry::default();
        metrics.register(
            "status_system_severity",
            "System status: 0 OK, 1 MINOR, 2 MAJOR, 3 OUTAGE",
            families.system.clone(),
        );
        metrics.register(
            "status_dependency_severity",
            "Reported status of each dependency: 0 OK, 1 MINOR, 2 MAJOR, 3 OUTAGE",
            families.dependency.clone(),
        );
        metrics.register(
            "status_dependency_value",
            "The value the latest check of each dependency measured, where it measures one: a latency in milliseconds, a queue's depth, a certificate's expiry in Unix seconds",
            families.values.clone(),
        );
        metrics.register_with_unit(
            "status_check_duration",
            "Time each check took",
            Unit::Seconds,
            families.durations.clone(),
        );
        metrics.register(
            "status_checks",
            "Checks run, by outcome (ok, minor, major, outage, timeout, panic)",
            families.checks.clone(),
        );
        metrics.register(
            "status_feature_enabled",
            "Whether each feature is enabled (1) or not (0)",
            families.features.clone(),
        );
        metrics.register(
            "status_rotation_hold",
            "Whether each source holds the instance out of rotation (1) or not (0)",
            families.holds.clone(),
        );
        metrics.register(
            "status_group_condition",
            "Condition of each probe group: 0 OK, 1 MINOR, 2 MAJOR, 3 OUTAGE",
            families.groups.clone(),
        );
        for hook in hooks {
            hook(&mut metrics);
        }
        for info in registry.dependencies() {
            families.declare(info.id());
        }
        if let Err(e) = registry.add_listener(Feeder(Arc::clone(&families))) {
            tracing::error!("status metrics will not count checks: {e}");
        }
        Self {
            families,
            scrape: Mutex::new(metrics),
        }
    }

    /// The exposition text, with gauges read from the current report.
    pub(crate) fn render(&self, registry: &Registry) -> Result<String, fmt::Error> {
        let metrics = lock(&self.scrape);
        let f = &self.families;
        let report = registry.report();
        f.system.set(i64::from(report.condition().severity()));
        f.dependency.clear();
        f.values.clear();
        for result in report.results() {
            let id = IdLabel {
                id: result.id().to_string(),
            };
            if let Some(value) = result.observed_value().filter(|v| v.is_finite()) {
                f.values.get_or_create(&id).set(value);
            }
            f.dependency
                .get_or_create(&id)
                .set(i64::from(result.status().severity()));
        }
        f.features.clear();
        for feature in registry.features() {
            f.features
                .get_or_create(&FeatureLabel {
                    feature: feature.name.to_string(),
                })
                .set(i64::from(feature.enabled));
        }
        f.groups.clear();
        for group in registry.groups() {
            f.groups
                .get_or_create(&GroupLabel {
                    group: group.group().name().to_string(),
                })
                .set(i64::from(group.condition().severity()));
        }
        let holds = registry.holds();
        for source in HoldSource::ALL {
            f.holds
                .get_or_create(&SourceLabel {
                    source: source.as_str(),
                })
                .set(i64::from(holds.iter().any(|h| h.source == source)));
        }
        let mut text = String::new();
        encode(&mut text, &metrics)?;
        Ok(text)
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Families {
    /// Creates every series of a dependency at zero, so rates work from the first scrape.
    fn declare(&self, id: &DependencyId) {
        let id = id.to_string();
        drop(self.durations.get_or_create(&IdLabel { id: id.clone() }));
        for outcome in RunOutcome::ALL {
            drop(self.checks.get_or_create(&CheckLabels {
                id: id.clone(),
                outcome: outcome.as_str(),
            }));
        }
    }

    fn forget(&self, id: &DependencyId) {
        let id = id.to_string();
        self.durations.remove(&IdLabel { id: id.clone() });
        for outcome in RunOutcome::ALL {
            self.checks.remove(&CheckLabels {
                id: id.clone(),
                outcome: outcome.as_str(),
            });
        }
    }
}

/// Counts checks as the registry reports them.
struct Feeder(Arc<Families>);

impl fmt::Debug for Feeder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("status_http::Metrics")
    }
}

impl Listener for Feeder {
    fn on_added(&self, info: &DependencyInfo) {
        self.0.declare(info.id());
    }

    fn on_removed(&self, id: &DependencyId) {
        self.0.forget(id);
    }

    fn on_checked(&self, result: &CheckResult, outcome: RunOutcome) {
        let id = result.id().to_string();
        self.0
            .durations
            .get_or_create(&IdLabel { id: id.clone() })
            .observe(result.duration().as_secs_f64());
        self.0
            .checks
            .get_or_create(&CheckLabels {
                id,
                outcome: outcome.as_str(),
            })
            .inc();
    }
}

/// The OpenMetrics text format, for scrapers that ask for it (Prometheus does, first).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The classic Prometheus text format, for every other scraper.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// GET `/metrics`: OpenMetrics when the `Accept` header asks for it, else the classic
/// Prometheus text format, each under its own content type.
#[cfg_attr(feature = "openapi", utoipa::path(get, path = "/metrics", tag = "operators",
    responses(
        (status = 200, description = "Prometheus exposition", content(("text/plain"), ("application/openmetrics-text"))),
        (status = "default", description = "A rejected request (400, 401, 403, 404, 405, 408, 413, 414, 431)", body = crate::schema::Error))))]
pub(crate) async fn metrics(
    State(state): State<Arc<MetricsState>>,
    headers: HeaderMap,
) -> Response {
    let wants_openmetrics = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    match state.metrics.render(&state.registry) {
        Ok(text) => {
            let (content_type, body) = if wants_openmetrics {
                (OPENMETRICS, text)
            } else {
                (PROMETHEUS_TEXT, classic(&text))
            };
            (
                StatusCode::OK,
                [(CONTENT_TYPE, HeaderValue::from_static(content_type))],
                body,
            )
                .into_response()
        }
        Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// OpenMetrics text as the classic format (version 0.0.4): no `# EOF`, `# UNIT` or
/// `_created` lines, no exemplars; a counter's `# HELP` and `# TYPE` name its `_total`
/// samples; `info` and `unknown` types become `gauge` and `untyped`.
fn classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut counters = std::collections::HashSet::new();
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some(name) = rest.strip_suffix(" counter") {
                counters.insert(name);
            }
        }
    }
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            let suffix = if counters.contains(name) {
                "_total"
            } else {
                ""
            };
            let _ = writeln!(out, "# HELP {name}{suffix} {help}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (suffix, kind) = match kind {
                "counter" => ("_total", "counter"),
                "info" => ("", "gauge"),
                "unknown" => ("", "untyped"),
                other => ("", other),
            };
            let _ = writeln!(out, "# TYPE {name}{suffix} {kind}");
        } else {
            let sample = line.split(" # ").next().unwrap_or(line);
            let name = sample.split(['{', ' ']).next().unwrap_or(sample);
            if name.ends_with("_created") {
                continue;
            }
            out.push_str(sample);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::classic;

    #[test]
    fn openmetrics_to_classic() {
        let openmetrics = "# HELP shop_orders Orders taken.\n# TYPE shop_orders counter\n\
                           shop_orders_total{kind=\"a\"} 3 # {trace=\"x\"} 1.0\n\
                           shop_orders_created{kind=\"a\"} 1.7e9\n\
                           # HELP up Up.\n# TYPE up gauge\n# UNIT up seconds\nup 1\n# EOF\n";
        assert_eq!(
            classic(openmetrics),
            "# HELP shop_orders_total Orders taken.\n# TYPE shop_orders_total counter\n\
             shop_orders_total{kind=\"a\"} 3\n# HELP up Up.\n# TYPE up gauge\nup 1\n"
        );
    }
}
