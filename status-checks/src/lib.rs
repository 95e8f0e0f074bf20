//! Checks of real components for [status](status_core), each behind its cargo feature, and
//! the Redis and etcd clients the fleet's stores (status-fleet) and the cull budgets
//! (status-traffic) share. The core holds the model, the engine, probes and facts; this
//! crate holds what talks to the outside.
//!
//! | module | feature | checks |
//! |---|---|---|
//! | `redis` | `redis` | PING over a reused multiplexed connection |
//! | `postgres` | `postgres` | `SELECT 1` (or a query) on a reused connection |
//! | `http` | `http` | a URL's code, body and latency; another `status` instance's summary |
//! | `net` | `net` | TCP connect, DNS resolution |
//! | `system` | `system` | free disk space, process memory |
//! | `tls` | `tls` | a certificate's lifetime left (an endpoint's, or a file's), its chain verified |
//! | `memcached` | `memcached` | a `version` round trip |
//! | `etcd` | `etcd` | a member's status: a leader, no alarm, no error |
//! | `mysql` | `mysql` | `SELECT 1` (or a query) on a reused connection, MySQL or MariaDB |
//! | `amqp` | `amqp` | a channel opened on a reused connection (RabbitMQ); a queue's depth when asked |
//! | `nats` | `nats` | a round trip (PING, PONG); JetStream's availability when asked |
//! | `store` | `redis`, `etcd` | `RedisStore` and `EtcdStore`: the clients status-fleet and status-traffic share |
//!
//! Each check reports the latency it measured (or the value it graded) and never holds a
//! connection or a task past the dependency's timeout. No feature is on by default.
//!
//! ```ignore
//! use status_checks::redis::RedisCheck;
//! use status_core::{Dependency, Registry, Urgency};
//!
//! let registry = Registry::new();
//! registry.add(
//!     Dependency::builder("sessions", RedisCheck::new("redis://127.0.0.1:6379")?)
//!         .urgency(Urgency::Weak)
//!         .build()?,
//! )?;
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(any(
    feature = "redis",
    feature = "postgres",
    feature = "http",
    feature = "net",
    feature = "memcached",
    feature = "etcd",
    feature = "nats",
    feature = "mysql",
    feature = "amqp"
))]
mod latency;

#[cfg(any(feature = "redis", feature = "postgres"))]
mod address;
#[cfg(feature = "amqp")]
pub mod amqp;
#[cfg(any(feature = "redis", feature = "postgres"))]
mod bounded;
#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "memcached")]
pub mod memcached;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "nats")]
pub mod nats;
#[cfg(feature = "net")]
pub mod net;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(any(feature = "tls", feature = "amqp", feature = "nats"))]
mod roots;
#[cfg(any(feature = "redis", feature = "etcd"))]
pub mod store;
#[cfg(feature = "system")]
pub mod system;
#[cfg(feature = "tls")]
pub mod tls;
