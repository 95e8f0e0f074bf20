//! status-history's integration tests, in one binary (one link for all of them): stores that
//! fail, attach, incidents, objectives, ownership, PostgreSQL, promtool, replays against a
//! brute force, the store's contract. Each module is one subject.

mod schedule;
#[cfg(feature = "postgres")]
#[allow(dead_code)]
#[path = "../../../status-checks/tests/components/servers.rs"]
mod servers;

mod attach;
mod faults;
mod incidents;
mod objectives;
mod ownership;
mod postgres;
mod promtool;
mod replay;
mod store;
