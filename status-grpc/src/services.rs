//! Which services the health service answers for, and the status of each: a pure reading of
//! the registry, the same for `Check`, `Watch` and `List`.

use status_core::{CheckStatus, HoldSource, Registry};

use crate::ServingStatus;

/// The prefix of a feature's service name: `feature/checkout`.
pub const FEATURE_PREFIX: &str = "feature/";

/// The rotation holds as one evaluation reads them: once, however many services it answers.
pub(crate) struct Holds {
    /// Any hold in force: the instance is out of rotation.
    any: bool,
    /// A shutdown has begun: every service is NOT_SERVING.
    shutdown: bool,
}

impl Holds {
    pub(crate) fn read(registry: &Registry) -> Self {
        let holds = registry.holds();
        Self {
            any: !holds.is_empty(),
            shutdown: holds.iter().any(|h| h.source == HoldSource::Shutdown),
        }
    }
}

/// The status of `service` now, or `None` for a service this server does not know:
/// - `""`, the instance as a load balancer sees it: SERVING unless the summary would answer
///   503 (OUTAGE, a rotation hold) or startup is not complete;
/// - a probe group's name: SERVING while the group passes by its rule;
/// - `feature/{name}`: SERVING while the feature is enabled.
///
/// Once a shutdown has begun, every service is NOT_SERVING.
pub(crate) fn status(registry: &Registry, holds: &Holds, service: &str) -> Option<ServingStatus> {
    let serving = if service.is_empty() {
        registry.condition() != CheckStatus::Outage && !holds.any && registry.startup_complete()
    } else if let Some(feature) = service.strip_prefix(FEATURE_PREFIX) {
        registry.feature(feature)?.is_enabled()
    } else {
        registry.group_readiness(service, false)?.ready()
    };
    Some(if serving && !holds.shutdown {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    })
}

/// Every service this server knows, with its status: `""`, each group, each feature.
pub(crate) fn all(registry: &Registry) -> Vec<(String, ServingStatus)> {
    let holds = Holds::read(registry);
    let mut names = vec![String::new()];
    names.extend(
        registry
            .groups()
            .iter()
            .map(|g| g.group().name().to_string()),
    );
    names.extend(
        registry
            .features()
            .iter()
            .map(|f| format!("{FEATURE_PREFIX}{}", f.name)),
    );
    names
        .into_iter()
        .filter_map(|name| status(registry, &holds, &name).map(|s| (name, s)))
        .collect()
}
