//! The objectives of a history as gauges (feature `history`), read from their last reports
//! at each collection: `status.slo.burn_rate` (by `status.slo` and `status.slo.window`),
//! `status.slo.error_budget.remaining_ratio` and `status.slo.alert.firing` (by
//! `status.slo.severity`), as `/metrics` says them under its own names.

use opentelemetry::metrics::{Meter, ObservableGauge};
use opentelemetry::KeyValue;
use status_history::objective::{Severity, BURN_WINDOWS};
use status_history::History;

use crate::names;

/// Registers the objectives' gauges; keep them as long as the export.
pub(crate) fn register(meter: &Meter, history: &History) -> Vec<ObservableGauge<f64>> {
    let h = history.clone();
    let burn = meter
        .f64_observable_gauge(names::SLO_BURN_RATE)
        .with_unit("1")
        .with_description("The bad share of the observed time over a window, over what the objective allows (1 - objective)")
        .with_callback(move |observer| {
            for r in h.last_slos() {
                for w in BURN_WINDOWS {
                    if let Some(rate) = r.burn_rate(w.name) {
                        let at = [
                            KeyValue::new(names::SLO, r.name().to_owned()),
                            KeyValue::new(names::SLO_WINDOW, w.name),
                        ];
                        observer.observe(rate, &at);
                    }
                }
            }
        })
        .build();
    let h = history.clone();
    let budget = meter
        .f64_observable_gauge(names::SLO_BUDGET_REMAINING)
        .with_unit("1")
        .with_description(
            "What is left of the objective's error budget: 1 untouched, 0 spent, below 0 overspent",
        )
        .with_callback(move |observer| {
            for r in h.last_slos() {
                let at = [KeyValue::new(names::SLO, r.name().to_owned())];
                observer.observe(r.budget.remaining, &at);
            }
        })
        .build();
    let h = history.clone();
    let firing = meter
        .f64_observable_gauge(names::SLO_ALERT_FIRING)
        .with_unit("1")
        .with_description(
            "Whether a burn-rate alert of the severity fires for the objective: 1 or 0",
        )
        .with_callback(move |observer| {
            for r in h.last_slos() {
                for severity in [Severity::Page, Severity::Ticket] {
                    let at = [
                        KeyValue::new(names::SLO, r.name().to_owned()),
                        KeyValue::new(names::SLO_SEVERITY, severity.as_str()),
                    ];
                    observer.observe(if r.firing(severity) { 1.0 } else { 0.0 }, &at);
                }
            }
        })
        .build();
    vec![burn, budget, firing]
}
