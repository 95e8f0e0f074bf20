//! The fleet through Redis: each instance publishes its summary and reads the others' in one
//! script (one round trip, whatever the fleet's size), by the server's clock; a background
//! task does it every third of the TTL, and the view is served from memory.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::{FleetView, HealthRule, InstanceSummary};
use crate::{Error, Registry};

/// Sets this instance's summary (kept ten TTLs), indexes it, and returns the server's time
/// then every summary still kept, each prefixed by its heartbeat: `<ms>|<json>`. Ids whose
/// summary expired leave the index: nothing grows without bound.
const EXCHANGE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(ARGV[3]) * 10
redis.call('SET', KEYS[1] .. ':' .. ARGV[1], now .. '|' .. ARGV[2], 'PX', keep)
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], keep)
local out = {tostring(now)}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('GET', KEYS[1] .. ':' .. id)
  if v then table.insert(out, v) else redis.call('SREM', KEYS[1], id) end
end
return out
";

/// A fleet kept in Redis under one key prefix.
#[derive(Debug)]
pub struct RedisFleet {
    client: redis::Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    key: String,
    ttl: Duration,
}

impl RedisFleet {
    /// The fleet under `key` at `url`; an instance is stale `ttl` after its last heartbeat.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `url` is not a Redis URL.
    pub fn new(url: &str, key: impl Into<String>, ttl: Duration) -> Result<Self, Error> {
        let client = redis::Client::open(url)
            .map_err(|e| Error::invalid(format!("invalid Redis URL: {e}")))?;
        Ok(Self {
            client,
            connection: Mutex::new(None),
            key: key.into(),
            ttl,
        })
    }

    /// Publishes `me` and reads every instance's last summary with its age: one round trip.
    ///
    /// # Errors
    ///
    /// Redis unreachable, or an answer that does not parse.
    pub async fn exchange(
        &self,
        me: &InstanceSummary,
    ) -> Result<Vec<(InstanceSummary, Duration)>, String> {
        let mut slot = self.connection.lock().await;
        let mut connection = match slot.as_ref() {
            Some(c) => c.clone(),
            None => {
                let c = self
                    .client
                    .get_multiplexed_async_connection()
                    .await
                    .map_err(|e| e.to_string())?;
                *slot = Some(c.clone());
                c
            }
        };
        drop(slot);
        let json = serde_json::to_string(me).map_err(|e| e.to_string())?;
        let answer: Result<Vec<String>, _> = redis::cmd("EVAL")
            .arg(EXCHANGE)
            .arg(1)
            .arg(&self.key)
            .arg(&me.instance_id)
            .arg(json)
            .arg(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
            .query_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                *self.connection.lock().await = None;
                return Err(e.to_string());
            }
        };
        let mut rows = answer.into_iter();
        let now: u64 = rows
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or("no server time")?;
        Ok(rows
            .filter_map(|row| {
                let (beat, json) = row.split_once('|')?;
                let beat: u64 = beat.parse().ok()?;
                let summary: InstanceSummary = serde_json::from_str(json).ok()?;
                Some((summary, Duration::from_millis(now.saturating_sub(beat))))
            })
            .collect())
    }
}

/// This instance in the fleet: who it is, where, and how to reach its dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Unique in the fleet.
    pub instance_id: String,
    /// Its data center.
    pub datacenter: String,
    /// Its version.
    pub version: String,
    /// Its dashboard's URL, if known.
    pub url: String,
}

/// The fleet as this instance knows it: published and read every third of the TTL by a
/// background task, served from memory.
///
/// Redis lost or slow (each exchange may take a third of the TTL): the last view is kept,
/// marked stale, for three TTLs; after that every data center answers healthy with
/// `failOpen`: without news, sending traffic everywhere beats sending it nowhere. The
/// instance's own probes never wait on any of this.
#[derive(Debug, Clone)]
pub struct Fleet {
    view: Arc<RwLock<(Arc<FleetView>, Option<Instant>)>>,
    ttl: Duration,
}

impl Fleet {
    /// Starts publishing `registry`'s summary as `member` into `store`, every third of the
    /// TTL, on the current Tokio runtime, until the registry is dropped.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    #[must_use]
    pub fn start(registry: &Registry, store: RedisFleet, member: Member, rule: HealthRule) -> Self {
        let ttl = store.ttl;
        let fleet = Self {
            view: Arc::new(RwLock::new((
                Arc::new(FleetView::new(Vec::new(), ttl, rule).into_stale()),
                None,
            ))),
            ttl,
        };
        let registry = registry.downgrade();
        let view = Arc::clone(&fleet.view);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(ttl / 3);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(registry) = registry.upgrade() else {
                    return;
                };
                let holds = registry
                    .holds()
                    .iter()
                    .map(|h| h.source.as_str().to_owned())
                    .collect();
                let mut me = InstanceSummary::new(
                    &member.instance_id,
                    &member.datacenter,
                    registry.system_status(),
                    holds,
                    &member.version,
                );
                me.url.clone_from(&member.url);
                drop(registry);
                let exchanged = tokio::time::timeout(ttl / 3, store.exchange(&me)).await;
                if let Ok(Ok(summaries)) = exchanged {
                    let fresh = Arc::new(FleetView::new(summaries, ttl, rule));
                    *view
                        .write()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) =
                        (fresh, Some(Instant::now()));
                }
            }
        });
        fleet
    }

    /// The fleet now, from memory: fresh, stale (the store not read for a while), or failing
    /// open (not read for three TTLs). The same `Arc` until the next read of the store, so
    /// that renderings can be cached by it.
    #[must_use]
    pub fn view(&self) -> Arc<FleetView> {
        let guard = self
            .view
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (view, read_at) = &*guard;
        let age = read_at.map_or(Duration::MAX, |at| at.elapsed());
        if age <= self.ttl {
            return Arc::clone(view);
        }
        let mut stale = FleetView::clone(view).into_stale();
        if age > 3 * self.ttl {
            stale.fail_open = true;
            for dc in &mut stale.datacenters {
                dc.fail_open = true;
                dc.condition = crate::CheckStatus::Ok;
            }
        }
        Arc::new(stale)
    }
}
