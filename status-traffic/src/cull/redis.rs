//! Budgets kept in Redis, shared by a fleet: each ask is one Lua script, so its read, its
//! increment and its expiry happen atomically on the server, by the server's clock. A client
//! that dies mid-call cannot leave a key without expiry (the mistake of INCR then EXPIRE as
//! two commands, which leaves the budget spent forever), and instances whose clocks disagree
//! still share one window.
//!
//! Safe whatever the store does:
//! - **slow**: an ask carries a deadline on the server's clock (this instance's clock plus
//!   the offset the server's answers show); a script that runs after it grants nothing, so a
//!   Redis stalled past the client's timeout never spends a token nobody uses;
//! - **garbage**: a key of the wrong type, a counter that does not parse or is negative, is
//!   healed (deleted, or clamped at zero) instead of refusing for ever or granting for ever;
//! - **a cluster**: one key a budget (`{key}:fixed` or `{key}:sliding`, its hash tag the
//!   budget's key), passed in `KEYS`;
//! - **restarted empty, or new**: a second key, `{key}:known`, holds when the store learnt
//!   the budget (by its clock). A budget the store does not know (a Redis restarted without
//!   persistence forgot both keys, or the budget is new) counts as spent for one window from
//!   then ([`Grant::Unknown`]), so grants it forgot still count and the capacity holds across
//!   the restart; [`RedisBudget::vouch`] is an operator's word that nothing was forgotten.
//!   With RDB snapshots a restart may still forget the grants made since the last snapshot
//!   (the key of when it learnt the budget survives), with AOF (`appendfsync everysec`) at most
//!   a second's.

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use status_checks::store::RedisStore;

use super::budget::{Asking, Budget, BudgetError, BudgetWindow, Grant, Vouching};

/// What both scripts do first: the server's time, a deadline (answer 2 past it), and when
/// the store learnt the budget in `KEYS[2]`: a budget it does not know (new, or forgotten)
/// counts as spent for a window from then (answer 3, with the ms left).
macro_rules! preamble {
    () => {
        r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window, capacity, deadline = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
if now > deadline then return {2, 0, now} end
-- When the store learnt the budget: unknown (new, or forgotten) counts as spent for a window.
local read, known = pcall(redis.call, 'GET', KEYS[2])
if not read then redis.call('DEL', KEYS[2]); known = false end
known = tonumber(known)
local keep = math.max(window * 2, 604800000)
if not known or known > now then
  redis.call('SET', KEYS[2], now, 'PX', keep)
  return {3, window, now}
end
redis.call('PEXPIRE', KEYS[2], keep)
if now < known + window then return {3, known + window - now, now} end
"
    };
}

/// One hash a budget: the window's number (`w`) and the grants in it (`n`), counted up to the
/// capacity; it expires when its window ends. A field that does not parse, or a negative
/// count, is taken for zero and rewritten. `KEYS[2]` holds when the store learnt the budget:
/// for a window from then, nothing is granted (answer 3, with the ms left).
const FIXED: &str = concat!(
    preamble!(),
    r"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then redis.call('DEL', KEYS[1]) end
local current = math.floor(now / window)
local fields = redis.call('HMGET', KEYS[1], 'w', 'n')
local used = tonumber(fields[2])
if tonumber(fields[1]) ~= current or not used or used < 0 then used = 0 end
local ttl = window - (now % window) + 1000
if used >= capacity then
  redis.call('HSET', KEYS[1], 'w', current, 'n', used)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {0, used, now}
end
redis.call('HSET', KEYS[1], 'w', current, 'n', used + 1)
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, used + 1, now}
"
);

/// The grant times of the last window in a sorted set: exact, at most `capacity` members
/// (more, written by something else, are trimmed to the newest `capacity`). `KEYS[2]` as in
/// [`FIXED`].
const SLIDING: &str = concat!(
    preamble!(),
    r"
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'zset' then redis.call('DEL', KEYS[1]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
-- Grants stamped in the future (a forged member, a clock stepped back) count as now.
local used = redis.call('ZCARD', KEYS[1])
if used >= capacity then
  redis.call('PEXPIRE', KEYS[1], window)
  return {0, used, now}
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return {1, used + 1, now}
"
);

/// A budget in Redis, for every instance that names the same key.
pub struct RedisBudget {
    store: RedisStore,
    /// The key, with its hash tag: `{key}:fixed` or `{key}:sliding`.
    key: String,
    /// When the store learnt the budget, in the same slot: `{key}:known`.
    known: String,
    /// The server's clock less this instance's (ms), from the last answer; unknown at first.
    offset: AtomicI64,
    capacity: u64,
    window: Duration,
    kind: BudgetWindow,
    timeout: Duration,
    instance: String,
    asks: AtomicU64,
    /// Replicas a grant must reach before it is used (`WAIT`): 1 on a cluster, else 0.
    replicas: usize,
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
    /// `capacity` culls per `window` under `key`, counted as `kind`, at `url` (one URL, or a
    /// cluster's seed nodes separated by commas); asks that take longer than 250 ms are
    /// refusals, and grant nothing if they reach the server later than that. `instance`
    /// names this instance in the sliding window's set.
    ///
    /// # Errors
    ///
    /// If `url` is not a Redis URL, or `key` is empty or holds braces or control characters.
    pub fn new(
        url: &str,
        key: impl Into<String>,
        capacity: u64,
        window: Duration,
        kind: BudgetWindow,
        instance: impl Into<String>,
    ) -> Result<Self, status_core::Error> {
        let suffix = kind.name();
        let store = RedisStore::open(url)?;
        let key = key.into();
        Ok(Self {
            known: RedisStore::tagged(&key, "known")?,
            key: RedisStore::tagged(&key, suffix)?,
            replicas: usize::from(store.is_cluster()),
            store,
            offset: AtomicI64::new(i64::MIN),
            capacity,
            window,
            kind,
            timeout: Duration::from_millis(250),
            instance: instance.into(),
            asks: AtomicU64::new(0),
        })
    }

    /// How many replicas a grant must reach before it is used: a grant its master loses in a
    /// failover would be granted again. 1 by default on a cluster (seed nodes given), 0 on one
    /// server (with replicas of its own, set it). A grant not replicated in time is a refusal
    /// (its token spent, never used: the safe direction).
    #[must_use]
    pub fn replicas(mut self, replicas: usize) -> Self {
        self.replicas = replicas;
        self
    }

    /// How long an ask may take before it counts as a refusal.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// An operator's word that the store has forgotten no grant of this budget (a fleet and a
    /// store both new, a test): it grants at once, without counting a window as spent first.
    /// Never call it at every start: a store restarted empty would then forget grants
    /// silently.
    ///
    /// # Errors
    ///
    /// Redis unreachable.
    pub async fn vouch(&self) -> Result<(), BudgetError> {
        let unreachable = |e: redis::RedisError| BudgetError::Unreachable(e.to_string());
        let mut connection = self.store.connection().await.map_err(unreachable)?;
        let keep = u64::try_from(self.window.as_millis().saturating_mul(2))
            .unwrap_or(u64::MAX)
            .max(604_800_000);
        redis::cmd("SET")
            .arg(&self.known)
            .arg(0)
            .arg("PX")
            .arg(keep)
            .query_async::<()>(&mut connection)
            .await
            .map_err(unreachable)
    }

    /// This instance's clock, in ms since the epoch.
    fn local_ms() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    async fn ask(&self) -> Result<Grant, BudgetError> {
        let unreachable = |e: redis::RedisError| BudgetError::Unreachable(e.to_string());
        let mut connection = self.store.connection().await.map_err(unreachable)?;
        // The offset of the server's clock, learnt once by TIME, then from every answer.
        let mut offset = self.offset.load(Ordering::Relaxed);
        if offset == i64::MIN {
            let sent = Self::local_ms();
            let (secs, micros): (i64, i64) = redis::cmd("TIME")
                .query_async(&mut connection)
                .await
                .map_err(unreachable)?;
            offset = secs * 1000 + micros / 1000 - (sent + Self::local_ms()) / 2;
            self.offset.store(offset, Ordering::Relaxed);
        }
        let timeout = i64::try_from(self.timeout.as_millis()).unwrap_or(i64::MAX);
        let deadline = Self::local_ms() + offset + timeout;
        let script = match self.kind {
            BudgetWindow::Fixed => FIXED,
            BudgetWindow::Sliding => SLIDING,
        };
        let ask = self.asks.fetch_add(1, Ordering::Relaxed);
        let sent = Self::local_ms();
        let answer: Result<(u64, u64, i64), _> = redis::Script::new(script)
            .key(&self.key)
            .key(&self.known)
            .arg(u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX))
            .arg(self.capacity)
            .arg(format!("{}:{ask}", self.instance))
            .arg(deadline)
            .invoke_async(&mut connection)
            .await;
        match answer {
            Ok((granted, used, server_now)) => {
                // The server's clock as this answer shows it, against the ask's midpoint.
                let offset = server_now - (sent + Self::local_ms()) / 2;
                self.offset.store(offset, Ordering::Relaxed);
                match granted {
                    1 if self.replicas > 0 => {
                        let left = self.timeout.saturating_sub(Duration::from_millis(
                            u64::try_from(Self::local_ms() - sent).unwrap_or(0),
                        ));
                        let reached = self
                            .store
                            .replicated(&mut connection, &self.key, self.replicas, left)
                            .await
                            .map_err(unreachable)?;
                        if reached >= self.replicas {
                            Ok(Grant::Token { used })
                        } else {
                            Err(BudgetError::Unreachable(format!(
                                "the grant reached {reached} of {} replicas in time",
                                self.replicas
                            )))
                        }
                    }
                    1 => Ok(Grant::Token { used }),
                    0 => Ok(Grant::Spent { used }),
                    3 => Ok(Grant::Unknown {
                        left: Duration::from_millis(used),
                    }),
                    _ => Err(BudgetError::TimedOut(self.timeout)),
                }
            }
            Err(e) => {
                // A broken connection is made again on the next ask.
                self.store.reset().await;
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
                    // A late answer must not be read by the next ask: a new connection.
                    self.store.reset().await;
                    Err(BudgetError::TimedOut(self.timeout))
                }
            }
        })
    }

    fn vouch(&self) -> Vouching<'_> {
        Box::pin(RedisBudget::vouch(self))
    }

    fn describe(&self) -> String {
        let kind = self.kind.name();
        format!(
            "{kind} window in Redis ({} at {}), {} per {} s",
            self.key,
            self.store.describe(),
            self.capacity,
            self.window.as_secs()
        )
    }
}
