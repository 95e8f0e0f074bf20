//! The state sets and the measured values, read from the registry's facts at each collection.
//!
//! A state set is an UpDownCounter (an OTLP `Sum`, not monotonic) reporting every state, the
//! current one 1 and the others 0, as the semantic conventions model a value with a few states
//! (`hw.status`, `k8s.pod.status.phase`). A measured value is a gauge named by what it
//! measures, in its canonical unit (a latency in seconds), where the check said its unit.

use opentelemetry::metrics::{AsyncInstrument, Meter, ObservableGauge, ObservableUpDownCounter};
use opentelemetry::KeyValue;
use status_core::check::Quantity;
use status_core::{CheckResult, CheckStatus, GroupFacts, Registry, WeakRegistry};

use crate::names;

/// The states of the system, a dependency and a group, as `status.state` names them.
pub(crate) const STATES: [(CheckStatus, &str); 4] = [
    (CheckStatus::Ok, "ok"),
    (CheckStatus::Minor, "minor"),
    (CheckStatus::Major, "major"),
    (CheckStatus::Outage, "outage"),
];

/// A status as `status.state` names it.
pub(crate) fn state(status: CheckStatus) -> &'static str {
    STATES
        .iter()
        .find(|(s, _)| *s == status)
        .map_or("outage", |(_, name)| name)
}

/// The gauges, kept so their callbacks live as long as the export.
#[derive(Debug)]
pub(crate) struct Gauges {
    _system: ObservableUpDownCounter<i64>,
    _dependencies: ObservableUpDownCounter<i64>,
    _groups: ObservableUpDownCounter<i64>,
    _features: ObservableUpDownCounter<i64>,
    _values: Vec<ObservableGauge<f64>>,
}

/// Each quantity's metric: its name, unit and description.
const VALUES: [(Option<Quantity>, &str, &str, &str); 6] = [
    (
        Some(Quantity::Duration),
        names::DEPENDENCY_LATENCY,
        "s",
        "A duration the latest check measured (a latency), in seconds",
    ),
    (
        Some(Quantity::Timestamp),
        names::DEPENDENCY_TIMESTAMP,
        "s",
        "A moment the latest check measured (a certificate's expiry), in seconds since the Unix epoch",
    ),
    (
        Some(Quantity::Count),
        names::DEPENDENCY_COUNT,
        "{item}",
        "A count the latest check measured (a queue's depth)",
    ),
    (
        Some(Quantity::Ratio),
        names::DEPENDENCY_RATIO,
        "1",
        "A share the latest check measured (a failure ratio, free space), from 0 to 1",
    ),
    (
        Some(Quantity::Size),
        names::DEPENDENCY_SIZE,
        "By",
        "A size the latest check measured (resident memory), in bytes",
    ),
    (
        None,
        names::DEPENDENCY_VALUE,
        "",
        "A value the latest check measured in no unit it said, as measured",
    ),
];

/// `result`'s measured value in its quantity's canonical unit, with the quantity (`None`
/// when the check said no unit).
fn measured(result: &CheckResult) -> Option<(Option<Quantity>, f64)> {
    let value = result.observed_value().filter(|v| v.is_finite())?;
    Some(match result.observed_unit() {
        Some(unit) => (Some(unit.quantity()), unit.canonical(value)),
        None => (None, value),
    })
}

/// A dependency's attributes on every metric of it: its id, and `service.peer.name` (its
/// service pool) when it is a remote service.
pub(crate) fn identity(result: &CheckResult) -> Vec<KeyValue> {
    let mut attributes = vec![KeyValue::new(names::DEPENDENCY_ID, result.id().to_string())];
    if !result.service_pool().is_empty() {
        attributes.push(KeyValue::new(
            names::SERVICE_PEER_NAME,
            result.service_pool().to_owned(),
        ));
    }
    attributes
}

/// A callback that reads the registry, while it exists.
fn reading<T: 'static>(
    weak: &WeakRegistry,
    read: impl Fn(&Registry, &dyn AsyncInstrument<T>) + Send + Sync + 'static,
) -> impl Fn(&dyn AsyncInstrument<T>) + Send + Sync + 'static {
    let weak = weak.clone();
    move |observer| {
        if let Some(registry) = weak.upgrade() {
            read(&registry, observer);
        }
    }
}

/// Every state of a status, 1 for `current`, with `attributes` and `status.state`.
fn state_set(observer: &dyn AsyncInstrument<i64>, current: CheckStatus, attributes: &[KeyValue]) {
    let mut attributes = attributes.to_vec();
    attributes.push(KeyValue::new(names::STATE, ""));
    let last = attributes.len() - 1;
    for (status, name) in STATES {
        attributes[last] = KeyValue::new(names::STATE, name);
        observer.observe(i64::from(status == current), &attributes);
    }
}

impl Gauges {
    pub(crate) fn register(meter: &Meter, registry: &WeakRegistry) -> Self {
        let system = meter
            .i64_observable_up_down_counter(names::SYSTEM_STATE)
            .with_description("The system's status as a state set: 1 for the current state")
            .with_callback(reading(registry, |registry, observer| {
                state_set(observer, registry.facts().level(), &[]);
            }))
            .build();
        let dependencies = meter
            .i64_observable_up_down_counter(names::DEPENDENCY_STATE)
            .with_description("Each dependency's reported status as a state set")
            .with_callback(reading(registry, |registry, observer| {
                let facts = registry.facts();
                for dependency in facts.dependencies() {
                    let result = dependency.result();
                    let mut member_of: Vec<&str> =
                        facts.groups_of(dependency).map(GroupFacts::name).collect();
                    member_of.sort_unstable();
                    let mut attributes = identity(result);
                    attributes.extend([
                        KeyValue::new(names::DEPENDENCY_URGENCY, result.urgency().as_str()),
                        KeyValue::new(names::DEPENDENCY_KIND, result.kind().to_owned()),
                        KeyValue::new(names::DEPENDENCY_GROUPS, member_of.join(",")),
                    ]);
                    state_set(observer, result.status(), &attributes);
                }
            }))
            .build();
        let groups = meter
            .i64_observable_up_down_counter(names::GROUP_STATE)
            .with_description("Each probe group's condition as a state set")
            .with_callback(reading(registry, |registry, observer| {
                for group in registry.facts().groups() {
                    let name = KeyValue::new(names::GROUP_NAME, group.name().to_owned());
                    state_set(observer, group.level(), &[name]);
                }
            }))
            .build();
        let features = meter
            .i64_observable_up_down_counter(names::FEATURE_STATE)
            .with_description("Each feature as a state set: enabled or disabled")
            .with_callback(reading(registry, |registry, observer| {
                for feature in registry.features() {
                    let name = feature.name.to_string();
                    for (enabled, state) in [(true, "enabled"), (false, "disabled")] {
                        observer.observe(
                            i64::from(feature.enabled == enabled),
                            &[
                                KeyValue::new(names::FEATURE_NAME, name.clone()),
                                KeyValue::new(names::STATE, state),
                            ],
                        );
                    }
                }
            }))
            .build();
        let values = VALUES
            .into_iter()
            .map(|(quantity, name, unit, description)| {
                let gauge = meter
                    .f64_observable_gauge(name)
                    .with_description(description);
                let gauge = if unit.is_empty() {
                    gauge
                } else {
                    gauge.with_unit(unit)
                };
                gauge
                    .with_callback(reading(registry, move |registry, observer| {
                        for d in registry.facts().dependencies() {
                            match measured(d.result()) {
                                Some((of, value)) if of == quantity => {
                                    observer.observe(value, &identity(d.result()));
                                }
                                _ => {}
                            }
                        }
                    }))
                    .build()
            })
            .collect();
        Self {
            _system: system,
            _dependencies: dependencies,
            _groups: groups,
            _features: features,
            _values: values,
        }
    }
}
