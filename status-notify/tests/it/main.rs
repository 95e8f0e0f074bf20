//! status-notify's integration tests, in one binary: delivery to a real receiver, the
//! hysteresis ramp with notifications, hostile receivers, objectives' alerts, a slow sink.

mod notify;
mod notify_ramp;
mod sinks;
mod slo_alerts;
mod slow;
