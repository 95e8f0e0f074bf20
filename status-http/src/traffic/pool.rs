//! A node pool on the dashboard and in `/metrics`.

use std::sync::Arc;

#[cfg(feature = "metrics")]
use prometheus_client::encoding::NoLabelSet;
#[cfg(feature = "metrics")]
use prometheus_client::metrics::MetricType;
use status_traffic::pool::{NodeState, Pool};
use tower::Service;

#[cfg(feature = "metrics")]
use crate::live::Live;
#[cfg(feature = "dashboard")]
use crate::panel::{Panel, PanelView};

/// Reads a pool's nodes.
#[cfg(any(feature = "dashboard", feature = "metrics"))]
type ReadNodes = Arc<dyn Fn() -> Vec<NodeState> + Send + Sync>;

#[cfg(any(feature = "dashboard", feature = "metrics"))]
fn read_nodes<S, R>(pool: &Pool<S, R>) -> ReadNodes
where
    S: Service<R> + Send + 'static,
    R: 'static,
{
    let pool = pool.clone();
    Arc::new(move || pool.nodes())
}

#[cfg(feature = "dashboard")]
/// The dashboard's panel of a node pool titled `title`: each node's success rate, weight,
/// in-flight calls and limit, and its calls by outcome. Pass it to
/// [`Routes::panel`](crate::Routes::panel).
pub fn pool_panel<S, R>(title: impl Into<String>, pool: &Pool<S, R>) -> Panel
where
    S: Service<R> + Send + 'static,
    R: 'static,
{
    let nodes = read_nodes(pool);
    let (no_capacity, holds_refused) = {
        let (a, b) = (pool.clone(), pool.clone());
        (move || a.no_capacity(), move || b.holds_refused())
    };
    Panel::new(title, move || {
        let nodes = nodes();
        let healthy = nodes
            .iter()
            .filter(|n| n.rate >= status_traffic::pool::HEALTHY_RATE)
            .count();
        let header = [
            "node",
            "success",
            "weight",
            "in flight",
            "limit",
            "ok",
            "dropped",
            "failed",
            "skipped full",
        ]
        .map(str::to_owned)
        .to_vec();
        let rows = nodes
            .iter()
            .map(|n| {
                vec![
                    n.name.clone(),
                    format!("{:.1} %", n.rate * 100.0),
                    format!("{:.3}", n.weight),
                    n.in_flight.to_string(),
                    n.limit.to_string(),
                    n.success.to_string(),
                    n.drop.to_string(),
                    n.ignore.to_string(),
                    n.no_capacity.to_string(),
                ]
            })
            .collect();
        PanelView::new()
            .fact("Healthy nodes", format!("{healthy} of {}", nodes.len()))
            .fact("Refused, no capacity", no_capacity().to_string())
            .fact(
                "Failures not held back (half the nodes held already)",
                holds_refused().to_string(),
            )
            .table(header, rows)
    })
}

#[cfg(feature = "metrics")]
/// Registers a node pool's metrics under the label `pool = name`, read when scraped:
/// `status_pool_node_weight{node}` and `status_pool_requests_total{node,outcome}` (`success`,
/// `drop`, `ignore`, and `no_capacity`: the times the cascade found the node at its limit and
/// went on), and `status_pool_holds_refused_total`: failures that held their node back for
/// nothing because the share of held nodes was reached (a pool-wide failure). Pass it to
/// [`Routes::register_metrics`](crate::Routes::register_metrics).
pub fn pool_metrics<S, R>(
    name: impl Into<String>,
    pool: &Pool<S, R>,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static
where
    S: Service<R> + Send + 'static,
    R: 'static,
{
    let name = name.into();
    let nodes = read_nodes(pool);
    let held = pool.clone();
    move |metrics| {
        let sub = metrics.sub_registry_with_label(("pool".into(), name.into()));
        sub.register(
            "status_pool_holds_refused",
            "Failures that held their node back for nothing: the share of held nodes was reached",
            Live::new(MetricType::Counter, move |mut encoder| {
                encoder.encode_counter::<NoLabelSet, _, u64>(&held.holds_refused(), None)
            }),
        );
        let weights = Arc::clone(&nodes);
        sub.register(
            "status_pool_node_weight",
            "Each node's weight in the pool's shuffle: its success rate, cubed, at least 0.01",
            Live::new(MetricType::Gauge, move |mut encoder| {
                for node in weights() {
                    encoder
                        .encode_family(&[("node", node.name.as_str())])?
                        .encode_gauge(&node.weight)?;
                }
                Ok(())
            }),
        );
        sub.register(
            "status_pool_requests",
            "Calls of each node, by outcome",
            Live::new(MetricType::Counter, move |mut encoder| {
                for node in nodes() {
                    for (outcome, count) in [
                        ("success", node.success),
                        ("drop", node.drop),
                        ("ignore", node.ignore),
                        ("no_capacity", node.no_capacity),
                    ] {
                        encoder
                            .encode_family(&[("node", node.name.as_str()), ("outcome", outcome)])?
                            .encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                    }
                }
                Ok(())
            }),
        );
    }
}
