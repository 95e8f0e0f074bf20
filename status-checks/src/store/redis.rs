//! A Redis the fleet shares, one server or a cluster, behind one connection that is made when
//! first needed, shared by every caller, and dropped after any failure (so that a connection
//! still reading a late answer is never reused).
//!
//! One URL (`redis://host:6379/`) is one server; several separated by commas
//! (`redis://a:6379,redis://b:6379`) are seed nodes of a Redis Cluster. Every script of
//! `status` passes all its keys in `KEYS`, under one hash tag, so that on a cluster each
//! runs on the one node that holds its slot.

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use tokio::sync::Mutex;

use status_core::Error;

/// Where a store is, and the connection to it, made when first needed.
pub struct RedisStore {
    kind: Kind,
    connection: Mutex<Option<Connection>>,
    described: String,
}

enum Kind {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// A connection to a [`RedisStore`]: multiplexed to one server, or routed by slot across a
/// cluster. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub enum Connection {
    /// To one server.
    Single(MultiplexedConnection),
    /// Across a cluster.
    Cluster(ClusterConnection),
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Single(_) => "Connection::Single",
            Self::Cluster(_) => "Connection::Cluster",
        })
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(c) => c.req_packed_command(cmd),
            Self::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(c) => c.req_packed_commands(cmd, offset, count),
            Self::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(c) => c.get_db(),
            Self::Cluster(c) => c.get_db(),
        }
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("at", &self.described)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// The store at `urls`: one URL, or several separated by commas for a cluster's seed
    /// nodes. Nothing is connected yet.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] for a URL that is not a Redis URL.
    pub fn open(urls: &str) -> Result<Self, Error> {
        let seeds: Vec<&str> = urls
            .split(',')
            .map(str::trim)
            .filter(|u| !u.is_empty())
            .collect();
        let invalid = |url: &str, e: redis::RedisError| {
            Error::invalid(format!(
                "invalid Redis URL: {}",
                crate::address::redis(url, &e)
            ))
        };
        let kind = match seeds[..] {
            [] => return Err(Error::invalid("no Redis URL")),
            [one] => Kind::Single(redis::Client::open(one).map_err(|e| invalid(one, e))?),
            _ => Kind::Cluster(
                redis::cluster::ClusterClientBuilder::new(seeds.clone())
                    .connection_timeout(std::time::Duration::from_millis(250))
                    .response_timeout(std::time::Duration::from_secs(1))
                    .retries(2)
                    .build()
                    .map_err(|e| {
                        // The first seed the URL parser refuses, else the client's word.
                        let bad = seeds
                            .iter()
                            .find(|s| url::Url::parse(s).is_err())
                            .unwrap_or(&seeds[0]);
                        invalid(bad, e)
                    })?,
            ),
        };
        // Never the password: the hosts only.
        let described = seeds
            .iter()
            .map(|s| {
                redis::parse_redis_url(s)
                    .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port().unwrap_or(6379))))
                    .unwrap_or_else(|| "?".to_owned())
            })
            .collect::<Vec<_>>()
            .join(",");
        Ok(Self {
            kind,
            connection: Mutex::new(None),
            described,
        })
    }

    /// The name `{key}:suffix`: `key` as the hash tag, so that every key named so with the
    /// same `key` lives in one slot of a cluster.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `key` is empty, or holds `{`, `}` or a control character.
    pub fn tagged(key: &str, suffix: &str) -> Result<String, Error> {
        if key.is_empty() || key.contains(['{', '}']) || key.chars().any(char::is_control) {
            return Err(Error::invalid(format!(
                "invalid key {key:?}: not empty, no braces, no control characters"
            )));
        }
        Ok(format!("{{{key}}}:{suffix}"))
    }

    /// Whether it is a cluster.
    #[must_use]
    pub fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    /// Its hosts and ports, without credentials.
    #[must_use]
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// The shared connection, made now if there is none.
    ///
    /// # Errors
    ///
    /// The store cannot be reached.
    pub async fn connection(&self) -> redis::RedisResult<Connection> {
        let mut slot = self.connection.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = match &self.kind {
            Kind::Single(client) => {
                Connection::Single(client.get_multiplexed_async_connection().await?)
            }
            Kind::Cluster(client) => Connection::Cluster(client.get_async_connection().await?),
        };
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Waits until the writes made so far on `connection` to `key`'s server reached at least
    /// `replicas` replicas, for at most `timeout`: how many did (Redis's `WAIT`, sent on a
    /// cluster to the master of `key`'s slot). A write not yet replicated can be lost when its
    /// master fails over.
    ///
    /// # Errors
    ///
    /// The store cannot be reached.
    pub async fn replicated(
        &self,
        connection: &mut Connection,
        key: &str,
        replicas: usize,
        timeout: std::time::Duration,
    ) -> redis::RedisResult<usize> {
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas).arg(
            u64::try_from(timeout.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        );
        let acknowledged = match connection {
            Connection::Single(c) => wait.query_async(c).await?,
            Connection::Cluster(c) => {
                use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                let slot = redis::cluster_routing::get_slot(key.as_bytes());
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                    Route::new(slot, SlotAddr::Master),
                ));
                redis::from_redis_value(&c.route_command(&wait, route).await?)?
            }
        };
        Ok(acknowledged)
    }

    /// Drops the shared connection: the next call makes a new one. After a failure or a
    /// timeout, so that a connection still reading a late answer is never reused.
    pub async fn reset(&self) {
        *self.connection.lock().await = None;
    }
}
