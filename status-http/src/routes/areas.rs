//! The builder's settings of the areas features bring: agents (`mcp`), metrics, the
//! dashboard's panels, the fleet.

#[cfg(feature = "dashboard")]
use crate::panel::Panel;

use super::Routes;

impl Routes {
    /// Configures `/mcp` (the read-only MCP server, feature `mcp`): a read-only token for
    /// agents, its bounds. Whatever it was not told it takes from these routes: the admin
    /// token, the probes, the history and the fleet. Without this call `/mcp` serves
    /// `Mcp::new` so configured (the admin token alone may call it).
    #[cfg(feature = "mcp")]
    pub fn mcp(mut self, mcp: crate::Mcp) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Registers more metrics in the registry `/metrics` serves, beside the engine's: how
    /// the traffic mechanisms (load shedding, node pools, culling) publish theirs. The
    /// registry is [`prometheus_client`]'s, re-exported as `status_http::prometheus_client`.
    ///
    /// # Example
    ///
    /// ```
    /// use status_http::prometheus_client::metrics::counter::Counter;
    /// use status_http::Routes;
    ///
    /// let orders: Counter = Counter::default();
    /// let app: axum::Router = Routes::new(&status_core::Registry::new())
    ///     .register_metrics({
    ///         let orders = orders.clone();
    ///         move |metrics| metrics.register("shop_orders", "Orders taken", orders)
    ///     })
    ///     .build();
    /// orders.inc();
    /// ```
    #[cfg(feature = "metrics")]
    pub fn register_metrics(
        mut self,
        register: impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static,
    ) -> Self {
        self.metrics.push(Box::new(register));
        self
    }

    /// Adds a panel to the dashboard, shown in the order added above the dependencies: how
    /// the traffic mechanisms show their state and recent history (see
    /// [`traffic::shed_panel`](crate::traffic::shed_panel)).
    #[cfg(feature = "dashboard")]
    pub fn panel(mut self, panel: Panel) -> Self {
        self.panels.push(panel);
        self
    }

    /// Serves the fleet from `source`: a running `status_fleet::Fleet` (its views read
    /// from memory, never the store; its instances listed from the store a page at a time),
    /// or a closure handing out views. `GET /fleet/datacenters/{dc}` answers from the view
    /// (each data center's JSON made once per view), `GET /fleet` and `GET /status/fleet` add
    /// a page of instances, and `/metrics` gains `status_fleet_datacenter_healthy{dc}` and,
    /// with a store, `status_fleet_exchange_seconds` and `status_fleet_rejected_total{reason}`.
    /// Without it the fleet routes answer 404.
    #[cfg(feature = "fleet")]
    pub fn fleet(mut self, source: impl status_fleet::FleetSource) -> Self {
        let fleet = crate::fleet::Fleet::new(source);
        #[cfg(feature = "metrics")]
        {
            let metrics = fleet.clone();
            self.metrics.push(Box::new(move |registry| {
                crate::fleet::register_metrics(&metrics, registry);
            }));
        }
        self.fleet = Some(fleet);
        self
    }

    /// Fleet-aware readiness, opt-in (needs [`fleet`](Self::fleet)): `instance_id` of
    /// `datacenter` is excused a failure its data center shares, per dependency: when each of
    /// its failing dependencies fails on more than half of the other fresh instances there
    /// (and at least two), the failure is the data center's: the instance stays ready, the
    /// reason names each with its count, and whether the data center gets traffic is left to
    /// `/fleet/datacenters/{dc}` (and GSLB). A failure of its own fails readiness. Holds and startup still
    /// fail readiness. The readiness body then says which rule answered: `"rule": "instance"`
    /// or `"fleet"`.
    #[cfg(feature = "fleet")]
    pub fn fleet_aware_readiness(
        mut self,
        instance_id: impl Into<String>,
        datacenter: impl Into<String>,
    ) -> Self {
        self.fleet_aware = Some((instance_id.into(), datacenter.into()));
        self
    }
}
