//! The HTTP contract, through the router with `oneshot`, on Tokio's paused time.

mod support;

mod admin;
mod audit;
mod dashboard;
mod door;
mod fleet;
mod groups;
mod hardening;
#[cfg(feature = "history")]
mod history;
#[cfg(feature = "mcp")]
mod mcp;
mod metrics;
mod middleware;
mod mutes;
mod openapi;
#[cfg(feature = "otel")]
mod otel;
mod presentation;
mod probes;
mod shapes;
mod shutdown;
#[cfg(feature = "history")]
mod slos;
mod statuspage;
mod traffic;
mod widget;
