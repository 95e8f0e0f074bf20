//! `/mcp`: status-mcp's read-only MCP server, mounted beside the contract with the routes'
//! admin token, probes, history and fleet, and its door's counts in `/metrics`.

use status_mcp::{Mcp, McpService};

/// `mcp` given what the routes hold, for what it was not told itself.
pub(crate) fn complete(
    mcp: Mcp,
    admin_token: Option<&str>,
    probes: &status_core::Probes,
    #[cfg(feature = "history")] history: Option<&status_history::History>,
    #[cfg(feature = "fleet")] fleet: Option<&crate::fleet::Fleet>,
) -> Mcp {
    #[allow(unused_mut)] // without history and fleet, nothing more is added
    let mut mcp = mcp
        .or_admin_token(admin_token.unwrap_or_default())
        .or_probes(probes.clone());
    #[cfg(feature = "history")]
    if let Some(history) = history {
        mcp = mcp.or_history(history.clone());
    }
    #[cfg(feature = "fleet")]
    if let Some(fleet) = fleet {
        mcp = mcp.or_fleet(fleet.source());
    }
    mcp
}

/// The endpoint, and with `metrics` its counts registered:
/// `status_mcp_requests_total{outcome}`, `outcome` being `answered` (reached the protocol),
/// `unauthorized` (401 or 403) or `busy` (429).
pub(crate) fn service(
    mcp: Mcp,
    #[cfg(feature = "metrics")] metrics: &mut Vec<crate::metrics::MetricsHook>,
) -> McpService {
    #[cfg(feature = "metrics")]
    {
        let stats = mcp.stats();
        metrics.push(Box::new(move |registry| {
            registry.register(
                "status_mcp_requests",
                "Requests to /mcp, by outcome: answered, unauthorized (401, 403), busy (429)",
                crate::live::Live::counters("outcome", move || {
                    vec![
                        ("answered".to_owned(), stats.answered()),
                        ("unauthorized".to_owned(), stats.unauthorized()),
                        ("busy".to_owned(), stats.busy()),
                    ]
                }),
            );
        }));
    }
    mcp.service()
}
