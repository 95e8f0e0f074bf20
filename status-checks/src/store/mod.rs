//! The stores a fleet shares: Redis ([`RedisStore`], feature `redis`) and etcd
//! ([`EtcdStore`], feature `etcd`), each behind a client made when first needed and shared by
//! every caller. The fleet (status-fleet) and the cull budgets of `status-traffic` are
//! built on them.

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "redis")]
mod redis;

#[cfg(feature = "etcd")]
pub(crate) use self::etcd::endpoint as etcd_endpoint;
#[cfg(feature = "etcd")]
pub use self::etcd::{prefix_end, EtcdStore};
#[cfg(feature = "redis")]
pub use self::redis::{Connection, RedisStore};
