//! The culler on the dashboard and in `/metrics`.

use status_traffic::cull::CullerHandle;

#[cfg(feature = "metrics")]
use crate::live::{int, Live};
#[cfg(feature = "dashboard")]
use crate::panel::{Panel, PanelView};

#[cfg(feature = "dashboard")]
/// The dashboard's panel of a culler titled `title`: failures in the window against the
/// threshold, the budget, refusals, and the last decision and why.
pub fn cull_panel(title: impl Into<String>, culler: &CullerHandle) -> Panel {
    let culler = culler.clone();
    Panel::new(title, move || {
        let s = culler.state();
        let mut view = PanelView::new()
            .fact(
                format!("Failures in {} s", s.window_s),
                format!("{} (threshold {})", s.failures, s.threshold),
            )
            .fact("Culled", if s.culled { "yes" } else { "no" })
            .fact("Budget", s.budget.clone())
            .fact("Refused, budget spent", s.denied_spent.to_string())
            .fact(
                "Refused, budget unreachable",
                s.denied_unreachable.to_string(),
            );
        if let Some((at, why)) = &s.last {
            view = view.fact(
                "Last decision",
                format!("{why} ({})", at.format("%H:%M:%S UTC")),
            );
        }
        view
    })
}

#[cfg(feature = "metrics")]
/// Registers a culler's metrics, read when scraped: `status_cull_window_failures`,
/// `status_cull_culled` (0/1) and `status_cull_denied_total{reason}` (`spent`,
/// `unreachable`). Pass it to [`Routes::register_metrics`](crate::Routes::register_metrics).
pub fn cull_metrics(
    culler: &CullerHandle,
) -> impl FnOnce(&mut prometheus_client::registry::Registry) + Send + 'static {
    let culler = culler.clone();
    move |metrics| {
        let read = |pick: fn(&status_traffic::cull::CullerState) -> i64| {
            let culler = culler.clone();
            Live::gauge(move || pick(&culler.state()))
        };
        metrics.register(
            "status_cull_window_failures",
            "Failures of live traffic in the culler's window, at its last look",
            read(|s| int(s.failures)),
        );
        metrics.register(
            "status_cull_culled",
            "Whether this instance culled itself (1) or not (0)",
            read(|s| i64::from(s.culled)),
        );
        let culler = culler.clone();
        metrics.register(
            "status_cull_denied",
            "Culls the budget refused, by reason",
            Live::counters("reason", move || {
                let s = culler.state();
                vec![
                    ("spent".to_owned(), s.denied_spent),
                    ("unreachable".to_owned(), s.denied_unreachable),
                ]
            }),
        );
    }
}
