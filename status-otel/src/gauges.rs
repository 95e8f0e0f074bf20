//! The state sets, read from the registry's current report at each collection: every state
//! reported, the current one 1 and the others 0, as OpenTelemetry recommends for a value
//! with a few states (`k8s.container.status.state` has the same shape).

use opentelemetry::metrics::{AsyncInstrument, Meter, ObservableGauge};
use opentelemetry::KeyValue;
use status_core::{CheckStatus, GroupFacts, Registry, WeakRegistry};

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
    _system: ObservableGauge<u64>,
    _dependencies: ObservableGauge<u64>,
    _groups: ObservableGauge<u64>,
    _features: ObservableGauge<u64>,
    _values: ObservableGauge<f64>,
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
fn state_set(observer: &dyn AsyncInstrument<u64>, current: CheckStatus, attributes: &[KeyValue]) {
    let mut attributes = attributes.to_vec();
    attributes.push(KeyValue::new(names::STATE, ""));
    let last = attributes.len() - 1;
    for (status, name) in STATES {
        attributes[last] = KeyValue::new(names::STATE, name);
        observer.observe(u64::from(status == current), &attributes);
    }
}

impl Gauges {
    pub(crate) fn register(meter: &Meter, registry: &WeakRegistry) -> Self {
        let system = meter
            .u64_observable_gauge(names::SYSTEM_STATE)
            .with_description("The system's status as a state set: 1 for the current state")
            .with_callback(reading(registry, |registry, observer| {
                state_set(observer, registry.facts().level(), &[]);
            }))
            .build();
        let dependencies = meter
            .u64_observable_gauge(names::DEPENDENCY_STATE)
            .with_description("Each dependency's reported status as a state set")
            .with_callback(reading(registry, |registry, observer| {
                let facts = registry.facts();
                for dependency in facts.dependencies() {
                    let result = dependency.result();
                    let mut member_of: Vec<&str> =
                        facts.groups_of(dependency).map(GroupFacts::name).collect();
                    member_of.sort_unstable();
                    state_set(
                        observer,
                        result.status(),
                        &[
                            KeyValue::new(names::DEPENDENCY_ID, result.id().to_string()),
                            KeyValue::new(names::DEPENDENCY_URGENCY, result.urgency().as_str()),
                            KeyValue::new(names::DEPENDENCY_KIND, result.kind().to_owned()),
                            KeyValue::new(names::DEPENDENCY_GROUPS, member_of.join(",")),
                        ],
                    );
                }
            }))
            .build();
        let groups = meter
            .u64_observable_gauge(names::GROUP_STATE)
            .with_description("Each probe group's condition as a state set")
            .with_callback(reading(registry, |registry, observer| {
                for group in registry.facts().groups() {
                    let name = KeyValue::new(names::GROUP_NAME, group.name().to_owned());
                    state_set(observer, group.level(), &[name]);
                }
            }))
            .build();
        let features = meter
            .u64_observable_gauge(names::FEATURE_STATE)
            .with_description("Each feature as a state set: enabled or disabled")
            .with_callback(reading(registry, |registry, observer| {
                for feature in registry.features() {
                    let name = feature.name.to_string();
                    for (enabled, state) in [(true, "enabled"), (false, "disabled")] {
                        observer.observe(
                            u64::from(feature.enabled == enabled),
                            &[
                                KeyValue::new(names::FEATURE_NAME, name.clone()),
                                KeyValue::new(names::STATE, state),
                            ],
                        );
                    }
                }
            }))
            .build();
        let values = meter
            .f64_observable_gauge(names::DEPENDENCY_VALUE)
            .with_description(
                "The value each dependency's latest check measured, where it measures one",
            )
            .with_callback(reading(registry, |registry, observer| {
                for result in registry.report().results() {
                    if let Some(value) = result.observed_value().filter(|v| v.is_finite()) {
                        observer.observe(
                            value,
                            &[KeyValue::new(names::DEPENDENCY_ID, result.id().to_string())],
                        );
                    }
                }
            }))
            .build();
        Self {
            _system: system,
            _dependencies: dependencies,
            _groups: groups,
            _features: features,
            _values: values,
        }
    }
}
