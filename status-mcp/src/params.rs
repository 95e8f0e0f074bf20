//! What the tools read and the parameters they take: the floor below the tools and the
//! readers they call.

use rmcp::schemars;
use serde::Deserialize;
use status_core::{Probes, Registry};

/// What the tools read: the registry's facts, the probes' readiness, and when configured the
/// history and the fleet.
pub(crate) struct Sources {
    pub(crate) registry: Registry,
    pub(crate) probes: Probes,
    #[cfg(feature = "history")]
    pub(crate) history: Option<status_history::History>,
    #[cfg(feature = "fleet")]
    pub(crate) fleet: Option<crate::FleetWatch>,
}

/// The `why` tool's parameters.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct WhyParams {
    /// The dependency's id, as `summary` names it.
    pub(crate) id: String,
}

/// The `uptime` tool's parameters.
#[cfg_attr(not(feature = "history"), allow(dead_code))]
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct UptimeParams {
    /// A dependency's id; with neither it nor `group`, the system.
    #[serde(default)]
    pub(crate) dependency: Option<String>,
    /// A probe group's name.
    #[serde(default)]
    pub(crate) group: Option<String>,
    /// How far back from now: a number and `m`, `h` or `d` (`30m`, `24h`, `30d`); 24h when
    /// not given.
    #[serde(default)]
    pub(crate) window: Option<String>,
}

/// The `incidents` tool's parameters.
#[cfg_attr(not(feature = "history"), allow(dead_code))]
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct IncidentsParams {
    /// Incidents resolved within this many days are included, with every open one (1 to 90;
    /// 7 when not given).
    #[serde(default)]
    pub(crate) days: Option<u32>,
    /// At most this many, the latest started first (1 to 50; 10 when not given).
    #[serde(default)]
    pub(crate) limit: Option<u32>,
}

/// The `maintenances` tool's parameters.
#[cfg_attr(not(feature = "history"), allow(dead_code))]
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct MaintenancesParams {
    /// Maintenances ended within this many days are included, with every one in progress or
    /// ahead (1 to 90; 7 when not given).
    #[serde(default)]
    pub(crate) days: Option<u32>,
}

/// The `slos` tool's parameters.
#[cfg_attr(not(feature = "history"), allow(dead_code))]
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct SlosParams {
    /// One objective's name; every objective when not given.
    #[serde(default)]
    pub(crate) name: Option<String>,
}
