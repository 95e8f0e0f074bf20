//! The engine, on Tokio's paused time.

mod support;

mod drain;
mod facts;
mod features;
mod graph;
mod groups;
mod history;
mod hysteresis;
mod listeners;
mod logs;
mod mutes;
mod passive;
mod registry;
mod reports;
mod rotation;
mod running;
mod seed;
mod staleness;
