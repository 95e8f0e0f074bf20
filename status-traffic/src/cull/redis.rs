//! Budgets kept in Redis, shared by a fleet: each ask is one Lua script, so its read, its
//! increment and its expiry happen atomically on the server, by the server's clock. A client
//! that dies mid-call cannot leave a key without expiry (the mistake of INCR then EXPIRE as
//! two commands, which leaves the budget spent forever), and instances whose clocks disagree
//! still share one window.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::sync::Mutex;

use super::budget::{Asking, Budget, BudgetError, Grant};

/// One key per window (`{prefix}:<window number>`), counted up to the capacity; the key
/// expires when its window ends. A key found without expiry (written by something else) is
/// given one.
const FIXED: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local key = KEYS[1] .. ':' .. math.floor(now / window)
local ttl = window - (now % window) + 1000
local used = tonumber(redis.call('GET', key) or '0')
if used >= capacity then
  if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, ttl) end
  return {0, used}
end
used = redis.call('INCR', key)
redis.call('PEXPIRE', key, ttl)
return {1, used}
";

/// The grant times of the last window in a sorted set: exact, at most `capacity` members.
const SLIDING: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local used = redis.call('ZCARD', KEYS[1])
if used >= capacity then
  redis.call('PEXPIRE', KEYS[1], window)
  return {0, used}
end
redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. now)
redis.call('PEXPIRE', KEYS[1], window)
return {1, used + 1}
";

/// How a Redis budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// At most `capacity` per calendar window (windows numbered from the epoch by the
    /// server's clock). Two windows' worth can pass around an edge.
    Fixed,
    /// At most `capacity` in any window-long span: the grant times of the last window are
    /// kept (a sorted set of at most `capacity` members).
    Sliding,
}

/// A budget in Redis, for every instance that names the same key.
pub struct RedisBudget {
    client: redis::Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    key: String,
    capacity: u64,
    window: Duration,
    kind: Window,
    timeout: Duration,
    instance: String,
    asks: AtomicU64,
}

impl fmt::Debug for RedisBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBudget")
            .field("key", &self.key)
            .field("capacity", &self.capacity)
            .field("window", &self.window)
            .field("kind", &self.kind)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisBudget {
    /// `capacity` culls per `window` under `key`, counted as `kind`; asks that take longer
    /// than 250 ms are refusals. `instance` names this instance in the sliding window's set.
    ///
    /// # Errors
    ///
    /// If `url` is not a Redis URL.
    pub fn new(
        url: &str,
        key: impl Into<String>,
        capacity: u64,
        window: Duration,
        kind: Window,
        instance: impl Into<String>,
    ) -> Result<Self, redis::RedisError> {
        Ok(Self {
            client: redis::Client::open(url)?,
            connection: Mutex::new(None),
            key: key.into(),
            capacity,
            window,
            kind,
            timeout: Duration::from_millis(250),
            instance: instance.into(),
            asks: AtomicU64::new(0),
        })
    }

    /// How long an ask may take before it counts as a refusal.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn ask(&self) -> Result<Grant, BudgetError> {
        let unreachable = |e: redis::RedisError| BudgetError::Unreachable(e.to_string());
        let mut slot = self.connection.lock().await;
        let mut connection = match slot.as_ref() {
            Some(connection) => connection.clone(),
            None => {
                let connection = self
                    .client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(unreachable)?;
                *slot = Some(connection.clone());
                connection
            }
        };
        drop(slot);
        let script = match self.kind {
            Window::Fixed => FIXED,
            Window::Sliding => SLIDING,
        };
        let ask = self.asks.fetch_add(1, Ordering::Relaxed);
        let answer: Result<(u64, u64), _> = redis::cmd("EVAL")
            .arg(script)
            .arg(1)
            .arg(&self.key)
            .arg(u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX))
            .arg(self.capacity)
            .arg(format!("{}:{ask}", self.instance))
            .query_async(&mut connection)
            .await;
        match answer {
            Ok((1, used)) => Ok(Grant::Token { used }),
            Ok((_, used)) => Ok(Grant::Spent { used }),
            Err(e) => {
                // A broken connection is made again on the next ask.
                *self.connection.lock().await = None;
                Err(unreachable(e))
            }
        }
    }
}

impl Budget for RedisBudget {
    fn take(&self) -> Asking<'_> {
        Box::pin(async move {
            match tokio::time::timeout(self.timeout, self.ask()).await {
                Ok(answer) => answer,
                Err(_) => {
                    *self.connection.lock().await = None;
                    Err(BudgetError::TimedOut(self.timeout))
                }
            }
        })
    }

    fn describe(&self) -> String {
        let kind = match self.kind {
            Window::Fixed => "fixed",
            Window::Sliding => "sliding",
        };
        format!(
            "{kind} window in Redis ({}), {} per {} s",
            self.key,
            self.capacity,
            self.window.as_secs()
        )
    }
}
