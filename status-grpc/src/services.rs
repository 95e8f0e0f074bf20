//! Which services the health service answers for, and the status of each: a pure reading of
//! the registry, the same for `Check`, `Watch` and `List`.

use status_core::Probes;

use crate::ServingStatus;

/// The prefix of a feature's service name: `feature/checkout`.
pub const FEATURE_PREFIX: &str = "feature/";

/// Liveness as `/healthcheck/live` answers it: SERVING unless the instance culled itself.
pub const PROBE_LIVE: &str = "probe/live";
/// Readiness as `/healthcheck/ready` answers it: the bound group or the system, holds,
/// startup, and the fleet's excuse (the core's [`Probes`]).
pub const PROBE_READY: &str = "probe/ready";
/// Startup as `/healthcheck/startup` answers it: every dependency checked once.
pub const PROBE_STARTUP: &str = "probe/startup";

/// The status of `service` now, or `None` for a service this server does not know:
/// - `""`, the instance as a load balancer sees it ([`Probes::serving`]): SERVING exactly
///   when the summary answers a success code (in rotation, at a level the registry's
///   [`ServePolicy`](status_core::ServePolicy) serves);
/// - [`PROBE_LIVE`], [`PROBE_READY`], [`PROBE_STARTUP`]: exactly as the HTTP probes answer
///   (200 is SERVING), from the same [`Probes`];
/// - a probe group's name: SERVING while the group passes by its rule;
/// - `feature/{name}`: SERVING while the feature is enabled.
///
/// Each is the core's one verdict for that question, the one its HTTP route renders, so that
/// the two never disagree, through a shutdown too: a shutdown's hold fails `""`,
/// `probe/ready` and the groups that count holds, as it fails their routes; liveness,
/// startup, groups that ignore holds and features answer as their routes do.
pub(crate) fn status(probes: &Probes, service: &str) -> Option<ServingStatus> {
    let registry = probes.registry();
    let serving = match service {
        "" => probes.serving(),
        PROBE_LIVE => probes.live().is_ok(),
        PROBE_STARTUP => probes.started(),
        PROBE_READY => probes.ready(false).ready(),
        _ => match service.strip_prefix(FEATURE_PREFIX) {
            Some(feature) => registry.feature(feature)?.is_enabled(),
            None => registry.group_readiness(service, false)?.ready(),
        },
    };
    Some(self::serving(serving))
}

fn serving(yes: bool) -> ServingStatus {
    if yes {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    }
}

/// Every service this server knows, with its status: `""`, the probes, each group, each
/// feature.
pub(crate) fn all(probes: &Probes) -> Vec<(String, ServingStatus)> {
    let registry = probes.registry();
    let mut names = vec![String::new()];
    names.extend([PROBE_LIVE, PROBE_READY, PROBE_STARTUP].map(str::to_owned));
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
        .filter_map(|name| status(probes, &name).map(|s| (name, s)))
        .collect()
}
