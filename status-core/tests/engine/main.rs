//! The engine, on Tokio's paused time.

mod support;

mod drain;
mod features;
mod graph;
mod history;
mod hysteresis;
mod listeners;
mod registry;
mod reports;
mod running;
mod staleness;
