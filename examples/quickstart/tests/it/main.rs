//! The quickstart's integration tests, in one binary (one link for all of them): the real
//! binary and its router against real Redis, etcd, PostgreSQL, Chromium and clients nobody
//! here wrote. Each module is one subject; the helpers they share come first.

// The servers' helpers are written to be included on their own by any test binary, each
// with the socket helper it needs: here three of them bring it, one module each.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)] // Each subject uses its part.
mod agree;
#[allow(dead_code)]
#[path = "../../../../status-otel/tests/receiver/collector.rs"]
mod collector;
#[allow(dead_code)]
mod common;
#[path = "../../../../status-fleet/tests/stores/etcd_server.rs"]
mod etcd_server;
#[allow(dead_code)]
mod processes;
#[allow(dead_code)]
#[path = "../../../../status-checks/tests/components/servers.rs"]
mod servers;

mod binary;
mod burst;
mod cull;
mod dashboard;
mod datacenter_policy;
mod etcd;
mod fleet;
mod history;
mod maintenance;
mod notify;
mod pool;
mod readme;
mod routes;
mod shared;
mod socket;
