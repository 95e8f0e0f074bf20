//! The fleet's stores against real servers started by the test harness on free loopback
//! ports: `redis-server` (alone and as a cluster) and etcd (one member, or three).
//!
//! These run on real time: servers really start and stop. Every wait polls with a deadline.
#![cfg(all(feature = "redis", feature = "etcd"))]

mod etcd_server;
// Shared with status-core's component tests, which start the servers this one does not.
#[allow(dead_code)]
#[path = "../../../status-checks/tests/components/servers.rs"]
mod servers;

#[cfg(feature = "notify")]
mod chorus;
mod fleet;
mod fleet_store;
mod shared;
