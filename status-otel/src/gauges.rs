//! The state sets, read from the registry's current report at each collection: every state
//! reported, the current one 1 and the others 0, as OpenTelemetry recommends for a value
//! with a few states (`k8s.container.status.state` has the same shape).

use opentelemetry::metrics::{Meter, ObservableGauge};
use opentelemetry::KeyValue;
use status_core::{CheckStatus, WeakRegistry};

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

impl Gauges {
    pub(crate) fn register(meter: &Meter, registry: &WeakRegistry) -> Self {
        let weak = registry.clone();
        let system = meter
            .u64_observable_gauge(names::SYSTEM_STATE)
            .with_description("The system's status as a state set: 1 for the current state")
            .with_callback(move |observer| {
                let Some(registry) = weak.upgrade() else {
                    return;
                };
                let condition = registry.condition();
                for (status, name) in STATES {
                    observer.observe(
                        u64::from(status == condition),
                        &[KeyValue::new(names::STATE, name)],
                    );
                }
            })
            .build();
        let weak = registry.clone();
        let dependencies = meter
            .u64_observable_gauge(names::DEPENDENCY_STATE)
            .with_description("Each dependency's reported status as a state set")
            .with_callback(move |observer| {
                let Some(registry) = weak.upgrade() else {
                    return;
                };
                let groups = registry.groups();
                for result in registry.report().results() {
                    let info = result.info();
                    let mut member_of: Vec<&str> = groups
                        .iter()
                        .filter(|g| g.group().selects(info))
                        .map(|g| g.group().name().as_str())
                        .collect();
                    member_of.sort_unstable();
                    let mut attributes = vec![
                        KeyValue::new(names::DEPENDENCY_ID, result.id().to_string()),
                        KeyValue::new(names::DEPENDENCY_URGENCY, result.urgency().as_str()),
                        KeyValue::new(names::DEPENDENCY_KIND, result.kind().to_owned()),
                        KeyValue::new(names::DEPENDENCY_GROUPS, member_of.join(",")),
                        KeyValue::new(names::STATE, ""),
                    ];
                    let current = result.status();
                    for (status, name) in STATES {
                        attributes[4] = KeyValue::new(names::STATE, name);
                        observer.observe(u64::from(status == current), &attributes);
                    }
                }
            })
            .build();
        let weak = registry.clone();
        let groups = meter
            .u64_observable_gauge(names::GROUP_STATE)
            .with_description("Each probe group's condition as a state set")
            .with_callback(move |observer| {
                let Some(registry) = weak.upgrade() else {
                    return;
                };
                for group in registry.groups() {
                    let name = group.group().name().to_string();
                    let condition = group.condition();
                    for (status, state) in STATES {
                        observer.observe(
                            u64::from(status == condition),
                            &[
                                KeyValue::new(names::GROUP_NAME, name.clone()),
                                KeyValue::new(names::STATE, state),
                            ],
                        );
                    }
                }
            })
            .build();
        let weak = registry.clone();
        let features = meter
            .u64_observable_gauge(names::FEATURE_STATE)
            .with_description("Each feature as a state set: enabled or disabled")
            .with_callback(move |observer| {
                let Some(registry) = weak.upgrade() else {
                    return;
                };
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
            })
            .build();
        let weak = registry.clone();
        let values = meter
            .f64_observable_gauge(names::DEPENDENCY_VALUE)
            .with_description(
                "The value each dependency's latest check measured, where it measures one",
            )
            .with_callback(move |observer| {
                let Some(registry) = weak.upgrade() else {
                    return;
                };
                for result in registry.report().results() {
                    if let Some(value) = result.observed_value().filter(|v| v.is_finite()) {
                        observer.observe(
                            value,
                            &[KeyValue::new(names::DEPENDENCY_ID, result.id().to_string())],
                        );
                    }
                }
            })
            .build();
        Self {
            _values: values,
            _system: system,
            _dependencies: dependencies,
            _groups: groups,
            _features: features,
        }
    }
}
