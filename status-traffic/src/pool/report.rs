//! The pool as one dependency: the share of its nodes that are healthy, graded.

use std::time::Duration;

use status_core::check::{CheckOutcome, Threshold};
use status_core::Reporter;
use tower::Service;

use super::Pool;

/// A node's success rate under which it counts as unhealthy.
pub const HEALTHY_RATE: f64 = 0.5;

/// One node, as the dashboard and the metrics show it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NodeState {
    /// Its name.
    pub name: String,
    /// Its success rate now.
    pub rate: f64,
    /// Its weight in the shuffle: the rate cubed.
    pub weight: f64,
    /// Calls in flight.
    pub in_flight: usize,
    /// Its limiter's limit.
    pub limit: usize,
    /// Calls that succeeded, since the start.
    pub success: u64,
    /// Calls dropped (timeouts, overload).
    pub drop: u64,
    /// Calls that failed for reasons unrelated to load.
    pub ignore: u64,
    /// Times the cascade found it at its limit and went on.
    pub no_capacity: u64,
}

/// What a pool says of itself: the share of nodes whose success rate is at least 0.5, graded
/// by `threshold`, as the observed value; the message names the unhealthy ones.
#[must_use]
pub fn verdict(nodes: &[NodeState], threshold: &Threshold) -> CheckOutcome {
    if nodes.is_empty() {
        return CheckOutcome::new(threshold.status_of(0.0), "no nodes").with_value(0.0);
    }
    let healthy = nodes.iter().filter(|n| n.rate >= HEALTHY_RATE).count();
    let share = healthy as f64 / nodes.len() as f64;
    let mut message = format!("{healthy} of {} nodes healthy", nodes.len());
    let sick: Vec<String> = nodes
        .iter()
        .filter(|n| n.rate < HEALTHY_RATE)
        .map(|n| format!("{} at {:.0} % success", n.name, n.rate * 100.0))
        .collect();
    if !sick.is_empty() {
        message.push_str(&format!(" ({})", sick.join(", ")));
    }
    CheckOutcome::new(threshold.status_of(share), message).with_value(share)
}

impl<S: Service<R> + 'static, R: 'static> Pool<S, R>
where
    S: Send,
    R: Send,
{
    /// Reports the pool's [`verdict`] to `reporter` every `period`, from a task on the
    /// current Tokio runtime, until the registry is gone.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn report_to(
        &self,
        reporter: Reporter,
        period: Duration,
        threshold: Threshold,
    ) -> tokio::task::JoinHandle<()> {
        let pool = self.clone();
        crate::report::every(reporter, period, move || {
            Some(verdict(&pool.nodes(), &threshold))
        })
    }
}

#[cfg(test)]
mod tests {
    use status_core::CheckStatus;

    use super::*;

    fn node(name: &str, rate: f64) -> NodeState {
        NodeState {
            name: name.to_owned(),
            rate,
            weight: rate * rate * rate,
            in_flight: 0,
            limit: 20,
            success: 0,
            drop: 0,
            ignore: 0,
            no_capacity: 0,
        }
    }

    #[test]
    fn the_share_of_healthy_nodes_is_graded_and_observed() {
        let threshold = Threshold::at_least(0.999, 0.5, 0.001).unwrap();
        let all = [node("a", 1.0), node("b", 0.9), node("c", 0.6)];
        let outcome = verdict(&all, &threshold);
        assert_eq!(
            (outcome.status(), outcome.value()),
            (CheckStatus::Ok, Some(1.0))
        );
        let one_down = [node("a", 1.0), node("b", 0.02), node("c", 0.6)];
        let outcome = verdict(&one_down, &threshold);
        assert_eq!(outcome.status(), CheckStatus::Minor);
        assert_eq!(outcome.message(), "2 of 3 nodes healthy (b at 2 % success)");
        let two_down = [node("a", 0.1), node("b", 0.0), node("c", 0.6)];
        assert_eq!(verdict(&two_down, &threshold).status(), CheckStatus::Major);
        let none = [node("a", 0.1)];
        assert_eq!(verdict(&none, &threshold).status(), CheckStatus::Outage);
        assert_eq!(verdict(&[], &threshold).status(), CheckStatus::Outage);
    }
}
