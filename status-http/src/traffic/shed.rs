//! The shedding layer on the dashboard and in `/metrics`.

#[cfg(feature = "dashboard")]
use std::time::Duration;

#[cfg(feature = "dashboard")]
use status_traffic::shed::ShedSample;
use status_traffic::shed::{ShedLayer, ShedState};

#[cfg(feature = "metrics")]
use crate::live::{int, Live};
#[cfg(feature = "dashboard")]
use crate::panel::{Chart, Panel, PanelView};

#[cfg(feature = "dashboard")]
/// The dashboard's panel of a shedding layer titled `title`: its limit, in-flight and queued
/// requests and refusals by reason, and charts of the last five minutes of its
/// [`history`](ShedLayer::history) (kept by [`ShedLayer::report_to`]). Pass it to
/// [`Routes::panel`](crate::Routes::panel).
pub fn shed_panel<R: 'static>(title: impl Into<String>, layer: &ShedLayer<R>) -> Panel {
    let layer = layer.clone();
    Panel::new(title, move || {
        shed_view(&layer.state(), &layer.history(), layer.elapsed())
    })
}

#[cfg(feature = "dashboard")]
/// How far back the shedding panel's charts reach.
const PANEL_WINDOW: Duration = Duration::from_secs(300);

#[cfg(feature = "dashboard")]
fn shed_view(state: &ShedState, history: &[ShedSample], now: Duration) -> PanelView {
    let age = |s: &ShedSample| now.saturating_sub(s.at);
    let recent: Vec<&ShedSample> = history.iter().filter(|s| age(s) <= PANEL_WINDOW).collect();
    let line = |pick: fn(&ShedSample) -> usize| -> Vec<(Duration, f64)> {
        recent.iter().map(|s| (age(s), pick(s) as f64)).collect()
    };
    // Refusals per second over each sample's period.
    let refused = recent
        .iter()
        .map(|s| (age(s), s.refused as f64 / s.period.as_secs_f64().max(1e-3)))
        .collect();
    PanelView::new()
        .fact("Limit", state.limit.to_string())
        .fact("In flight", state.in_flight.to_string())
        .fact("Queued", state.queued.to_string())
        .fact("Refused, queue full", state.queue_full.to_string())
        .fact("Refused, waited too long", state.queue_timeout.to_string())
        .fact("Cut off at the deadline", state.elapsed.to_string())
        .chart(
            Chart::new("Concurrency", PANEL_WINDOW)
                .series("limit", line(|s| s.limit))
                .series("in flight", line(|s| s.in_flight))
                .series("queued", line(|s| s.queued)),
        )
        .chart(Chart::new("Refused per second", PANEL_WINDOW).series("refused", refused))
}

#[cfg(feature = "metrics")]
/// Registers a shedding layer's metrics under the label `layer = name`, read when scraped:
/// `status_shed_limit`, `status_shed_inflight`, `status_shed_queued` and
/// `status_shed_rejected_total{reason}` (`queue_full`, `queue_timeout`, `deadline`). Pass it
/// to [`Routes::register_metrics`](crate::Routes::register_metrics).
pub fn shed_metrics<R: 'static>(
    name: impl Into<String>,
    layer: &ShedLayer<R>,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static {
    let name = name.into();
    let layer = layer.clone();
    move |metrics| {
        let sub = metrics.sub_registry_with_label(("layer".into(), name.into()));
        let read = |pick: fn(&ShedState) -> usize| {
            let layer = layer.clone();
            Live::gauge(move || int(pick(&layer.state())))
        };
        sub.register(
            "status_shed_limit",
            "The shedding layer's concurrency limit",
            read(|s| s.limit),
        );
        sub.register(
            "status_shed_inflight",
            "Requests being processed",
            read(|s| s.in_flight),
        );
        sub.register("status_shed_queued", "Requests waiting", read(|s| s.queued));
        sub.register(
            "status_shed_rejected",
            "Requests refused, by reason",
            Live::counters("reason", move || {
                let s = layer.state();
                vec![
                    ("queue_full".to_owned(), s.queue_full),
                    ("queue_timeout".to_owned(), s.queue_timeout),
                    ("deadline".to_owned(), s.elapsed),
                ]
            }),
        );
    }
}
