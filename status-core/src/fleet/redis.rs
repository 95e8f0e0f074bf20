//! The fleet in Redis, at a constant cost per instance.
//!
//! One beat of one instance is one script of O(log N) work whatever the fleet's size N, and
//! reading every data center's verdict is O(D log N) for D data centers: no beat ever reads
//! another instance's summary. The keys, all under one hash tag so that a Redis Cluster keeps
//! them in one slot (and every key a script touches is passed in `KEYS`):
//!
//! | key | type | what |
//! |---|---|---|
//! | `{K}:beats` | sorted set | instance id → its last heartbeat (ms, the server's clock) |
//! | `{K}:inst` | hash | instance id → `dc \n condition \n serving \n beat \n summary JSON` |
//! | `{K}:live` | sorted set, by lex | `dc \0 condition \0 beat \0 id`: one member an instance |
//! | `{K}:serving` | sorted set, by lex | `dc \0 beat \0 id`: one member a serving instance |
//! | `{K}:dcs` | hash | data center → its last heartbeat |
//!
//! A data center's fresh instances of each condition, and its serving ones, are counted by
//! `ZLEXCOUNT` over the beats younger than the TTL: counts that no instance keeps up to date,
//! so none can drift. Each beat also retires a bounded number of instances not heard of for
//! ten TTLs (and any entry stamped in the future), undoing their members.
//!
//! What the store holds is not trusted: an instance's id is its key, not what its summary
//! says; heartbeats come from the server's clock only; a summary is at most 4 KiB; a key of
//! the wrong type is deleted (and the instances rebuild it at their next beat) instead of
//! failing every beat of the fleet. The script says what it healed; the client counts it.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use tokio::sync::Mutex;

use super::{
    Conditions, DatacenterCounts, InstancePage, InstanceQuery, InstanceSummary, InstanceView,
};
use crate::{CheckStatus, Error};

/// The most bytes of one instance's summary.
pub const MAX_SUMMARY: usize = 4096;
/// The most instances one beat retires.
const RETIRE: u32 = 8;
/// The most instances one page lists.
pub const MAX_PAGE: usize = 500;

/// One beat: heals keys of the wrong type (all five go), writes this instance (its members
/// moved to the new beat), retires at most `ARGV[7]` instances unheard of for ten TTLs or
/// stamped in the future, and answers `ok` (or `settling`, for a TTL after the store was
/// found empty or healed), the server's time, what it healed and retired, and each data
/// center's fresh instances by condition and its serving ones.
const BEAT: &str = r"
local types = {'zset', 'hash', 'zset', 'zset', 'hash'}
local healed = 0
for i = 1, 5 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and t ~= types[i] then healed = healed + 1 end
end
-- A key of the wrong type: every key goes (members without records would count twice), and
-- the instances rebuild them at their next beat.
if healed > 0 then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]) end
local empty = redis.call('EXISTS', KEYS[1]) == 0
local id, dc, cond, serving, json = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local ttl, retire, limit = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
if #id == 0 or #id > 128 or string.find(id, '[%z\n]') then return {'bad_id'} end
if #dc == 0 or #dc > 64 or string.find(dc, '[%z\n]') then return {'bad_datacenter'} end
if not string.find(cond, '^[0-3]$') or not string.find(serving, '^[01]$') then
  return {'bad_state'}
end
if #json > limit then return {'too_large'} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = ttl * 10

local function pad(ms) return string.format('%015d', ms) end
local function unlist(record, rid)
  local pdc, pcond, pserv, pbeat =
    string.match(record, '^([^\n]*)\n([0-3])\n([01])\n(%d+)\n')
  if not pdc then return end
  local b = pad(tonumber(pbeat))
  redis.call('ZREM', KEYS[3], pdc .. '\0' .. pcond .. '\0' .. b .. '\0' .. rid)
  if pserv == '1' then redis.call('ZREM', KEYS[4], pdc .. '\0' .. b .. '\0' .. rid) end
end

-- A store empty or healed is settling for a TTL: its counts hold only the instances that
-- beat since, and no client should take them for the fleet.
if empty then redis.call('HSET', KEYS[5], '\0settling', now) end
local settling = tonumber(redis.call('HGET', KEYS[5], '\0settling'))
if settling and settling <= now - ttl then
  redis.call('HDEL', KEYS[5], '\0settling')
  settling = nil
end

local previous = redis.call('HGET', KEYS[2], id)
if previous then unlist(previous, id) end
local b = pad(now)
redis.call('ZADD', KEYS[1], now, id)
redis.call('HSET', KEYS[2], id, dc .. '\n' .. cond .. '\n' .. serving .. '\n' .. now .. '\n' .. json)
redis.call('ZADD', KEYS[3], 0, dc .. '\0' .. cond .. '\0' .. b .. '\0' .. id)
if serving == '1' then redis.call('ZADD', KEYS[4], 0, dc .. '\0' .. b .. '\0' .. id) end
redis.call('HSET', KEYS[5], dc, now)

local retired = 0
local function retire_ids(ids)
  for _, rid in ipairs(ids) do
    local record = redis.call('HGET', KEYS[2], rid)
    if record then unlist(record, rid) end
    redis.call('HDEL', KEYS[2], rid)
    redis.call('ZREM', KEYS[1], rid)
    retired = retired + 1
  end
end
retire_ids(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - keep), 'LIMIT', 0, retire))
retire_ids(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now + keep), '+inf', 'LIMIT', 0, retire))
for _, k in ipairs({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]}) do
  redis.call('PEXPIRE', k, keep)
end

local out = {settling and 'settling' or 'ok', now, healed, retired}
local from, to = pad(now - ttl + 1), pad(now + ttl + 1)
local dcs = redis.call('HGETALL', KEYS[5])
for i = 1, #dcs, 2 do
  local name, seen = dcs[i], tonumber(dcs[i + 1])
  if string.byte(name, 1) == 0 then
    -- the settling mark
  elseif not seen or seen < now - keep or seen > now + keep then
    redis.call('HDEL', KEYS[5], name)
  else
    table.insert(out, name)
    for c = 0, 3 do
      local p = name .. '\0' .. c .. '\0'
      table.insert(out, redis.call('ZLEXCOUNT', KEYS[3], '[' .. p .. from, '(' .. p .. to))
    end
    local p = name .. '\0'
    table.insert(out, redis.call('ZLEXCOUNT', KEYS[4], '[' .. p .. from, '(' .. p .. to))
  end
end
return out
";

/// One page of instances in lex order of `{K}:live` after the cursor: the server's time, then
/// each member and its record (empty when missing, or larger than `ARGV[4]`).
const LIST: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ok, members = pcall(redis.call, 'ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
if not ok then return {tostring(now)} end
local out = {tostring(now)}
for _, member in ipairs(members) do
  local id = string.match(member, '^[^%z]*%z[0-3]%z%d+%z(.*)$')
  local ok2, record = pcall(redis.call, 'HGET', KEYS[2], id or '')
  table.insert(out, member)
  -- A record larger than any beat writes is garbage: never sent on.
  if ok2 and record and #record <= tonumber(ARGV[4]) then
    table.insert(out, record)
  else
    table.insert(out, '')
  end
end
return out
";

/// What one beat found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    /// The server's time, in ms since the epoch.
    pub now_ms: u64,
    /// Keys of the wrong type the beat deleted.
    pub healed: u64,
    /// Instances it retired.
    pub retired: u64,
    /// Every data center's fresh and serving instances.
    pub datacenters: Vec<DatacenterCounts>,
    /// Whether the store is settling: found empty (a restart, a flush) or healed less than a
    /// TTL ago, its counts hold only the instances that beat since. Not a view of the fleet.
    pub settling: bool,
}

/// Why a beat was refused or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeatError {
    /// The store refused what was sent: `bad_id`, `bad_datacenter`, `bad_state`, `too_large`.
    Rejected(&'static str),
    /// The store could not be reached, or answered what this client cannot read.
    Store(String),
}

impl std::fmt::Display for BeatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rejected(reason) => write!(f, "the store refused the beat: {reason}"),
            Self::Store(e) => write!(f, "the store failed: {e}"),
        }
    }
}

impl std::error::Error for BeatError {}

/// A fleet kept in Redis (one server, or a cluster: every key under one hash tag).
#[derive(Debug)]
pub struct RedisFleet {
    client: redis::Client,
    connection: Mutex<Option<MultiplexedConnection>>,
    keys: [String; 5],
    pub(super) ttl: Duration,
}

impl RedisFleet {
    /// The fleet under `key` at `url`; an instance is stale `ttl` after its last heartbeat.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `url` is not a Redis URL, or `key` is empty or holds `{`,
    /// `}` or a control character.
    pub fn new(url: &str, key: impl Into<String>, ttl: Duration) -> Result<Self, Error> {
        let client = redis::Client::open(url)
            .map_err(|e| Error::invalid(format!("invalid Redis URL: {e}")))?;
        let key = key.into();
        if key.is_empty() || key.contains(['{', '}']) || key.chars().any(char::is_control) {
            return Err(Error::invalid(format!(
                "invalid fleet key {key:?}: not empty, no braces, no control characters"
            )));
        }
        let keys = ["beats", "inst", "live", "serving", "dcs"].map(|k| format!("{{{key}}}:{k}"));
        Ok(Self {
            client,
            connection: Mutex::new(None),
            keys,
            ttl,
        })
    }

    /// The TTL: an instance is stale this long after its last heartbeat.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    async fn connection(&self) -> Result<MultiplexedConnection, BeatError> {
        let mut slot = self.connection.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = self
            .client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| BeatError::Store(e.to_string()))?;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Drops the connection: the next call makes a new one. For a call that failed or timed
    /// out, so that a connection still reading a late answer is never reused.
    pub async fn reset(&self) {
        *self.connection.lock().await = None;
    }

    /// One beat of `me`: publishes it and reads every data center's counts, in one script of
    /// constant work per instance.
    ///
    /// # Errors
    ///
    /// [`BeatError::Rejected`] for a summary the store refuses (too large, a bad id);
    /// [`BeatError::Store`] when Redis cannot be reached or answers garbage (the connection is
    /// then dropped).
    pub async fn beat(&self, me: &InstanceSummary) -> Result<Beat, BeatError> {
        let json = serde_json::to_string(me).map_err(|e| BeatError::Store(e.to_string()))?;
        if json.len() > MAX_SUMMARY {
            return Err(BeatError::Rejected("too_large"));
        }
        let mut connection = self.connection().await?;
        let answer: Result<Vec<redis::Value>, _> = redis::cmd("EVAL")
            .arg(BEAT)
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&me.instance_id)
            .arg(&me.datacenter)
            .arg(condition_digit(me.condition))
            .arg(u8::from(me.serving()))
            .arg(json)
            .arg(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
            .arg(RETIRE)
            .arg(MAX_SUMMARY)
            .query_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.reset().await;
                return Err(BeatError::Store(e.to_string()));
            }
        };
        parse_beat(&answer)
    }

    /// A page of instances: of `query.datacenter` (or all), after `query.cursor`, at most
    /// `query.limit` (at most [`MAX_PAGE`]); each with its age and whether it is stale.
    ///
    /// # Errors
    ///
    /// Redis unreachable, or a cursor this store did not hand out.
    pub async fn instances(&self, query: &InstanceQuery) -> Result<InstancePage, Error> {
        let (min, max) = page_bounds(query)?;
        let limit = query.limit.clamp(1, MAX_PAGE);
        let mut connection = self
            .connection()
            .await
            .map_err(|e| Error::invalid(e.to_string()))?;
        let answer: Result<Vec<Vec<u8>>, _> = redis::cmd("EVAL")
            .arg(LIST)
            .arg(2)
            .arg(&self.keys[2])
            .arg(&self.keys[1])
            .arg(min)
            .arg(max)
            .arg(limit)
            .arg(MAX_SUMMARY + 256)
            .query_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.reset().await;
                return Err(Error::invalid(format!("the fleet store failed: {e}")));
            }
        };
        Ok(parse_page(&answer, self.ttl, limit))
    }
}

/// A condition as the digit the store keeps: 0 OK … 3 OUTAGE.
fn condition_digit(condition: CheckStatus) -> u8 {
    match condition {
        CheckStatus::Ok => 0,
        CheckStatus::Minor => 1,
        CheckStatus::Major => 2,
        CheckStatus::Outage => 3,
    }
}

fn condition_of(digit: u8) -> Option<CheckStatus> {
    Some(match digit {
        b'0' => CheckStatus::Ok,
        b'1' => CheckStatus::Minor,
        b'2' => CheckStatus::Major,
        b'3' => CheckStatus::Outage,
        _ => return None,
    })
}

fn integer(value: &redis::Value) -> Option<u64> {
    match value {
        redis::Value::Int(n) => u64::try_from(*n).ok(),
        redis::Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        redis::Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

fn text(value: &redis::Value) -> Option<String> {
    match value {
        redis::Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

fn parse_beat(answer: &[redis::Value]) -> Result<Beat, BeatError> {
    let garbage = || BeatError::Store("an answer this client cannot read".to_owned());
    let status = answer.first().and_then(text).ok_or_else(garbage)?;
    let settling = status == "settling";
    if status != "ok" && !settling {
        return Err(BeatError::Rejected(match status.as_str() {
            "bad_id" => "bad_id",
            "bad_datacenter" => "bad_datacenter",
            "bad_state" => "bad_state",
            "too_large" => "too_large",
            _ => return Err(garbage()),
        }));
    }
    let number = |i: usize| answer.get(i).and_then(integer).ok_or_else(garbage);
    let (now_ms, healed, retired) = (number(1)?, number(2)?, number(3)?);
    let mut datacenters = Vec::new();
    for row in answer[4..].chunks(6) {
        let [name, ok, minor, major, outage, serving] = row else {
            return Err(garbage());
        };
        let count = |v: &redis::Value| {
            integer(v)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(garbage)
        };
        datacenters.push(DatacenterCounts {
            datacenter: text(name).ok_or_else(garbage)?,
            conditions: Conditions {
                ok: count(ok)?,
                minor: count(minor)?,
                major: count(major)?,
                outage: count(outage)?,
            },
            serving: count(serving)?,
        });
    }
    datacenters.sort_by(|a, b| a.datacenter.cmp(&b.datacenter));
    Ok(Beat {
        now_ms,
        healed,
        retired,
        datacenters,
        settling,
    })
}

/// The lex range of a page: after the cursor (a member, in hex), within the data center.
fn page_bounds(query: &InstanceQuery) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let (mut min, max) = match &query.datacenter {
        Some(dc) => {
            let mut min = b"[".to_vec();
            min.extend_from_slice(dc.as_bytes());
            min.push(0);
            let mut max = b"(".to_vec();
            max.extend_from_slice(dc.as_bytes());
            max.push(1);
            (min, max)
        }
        None => (b"-".to_vec(), b"+".to_vec()),
    };
    if let Some(cursor) = &query.cursor {
        let member = unhex(cursor).ok_or_else(|| Error::invalid("invalid cursor"))?;
        if let Some(dc) = &query.datacenter {
            if !member.starts_with(dc.as_bytes()) {
                return Err(Error::invalid("invalid cursor: another data center's"));
            }
        }
        min = b"(".to_vec();
        min.extend_from_slice(&member);
    }
    Ok((min, max))
}

fn parse_page(answer: &[Vec<u8>], ttl: Duration, limit: usize) -> InstancePage {
    let now: u64 = answer
        .first()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0);
    let mut instances = Vec::new();
    let mut last = None;
    for pair in answer[1.min(answer.len())..].chunks(2) {
        let [member, record] = pair else { break };
        last = Some(member.clone());
        if let Some(view) = instance_of(member, record, now, ttl) {
            instances.push(view);
        }
    }
    let full = answer.len().saturating_sub(1) / 2 >= limit;
    InstancePage {
        instances,
        next_cursor: last.filter(|_| full).map(|m| hex(&m)),
    }
}

/// An instance from its member (`dc \0 condition \0 beat \0 id`) and its record; `None` when
/// either does not parse. The id and data center come from the member, never from the JSON.
fn instance_of(member: &[u8], record: &[u8], now: u64, ttl: Duration) -> Option<InstanceView> {
    let mut parts = member.splitn(4, |b| *b == 0);
    let dc = std::str::from_utf8(parts.next()?).ok()?;
    let condition = condition_of(*parts.next()?.first()?)?;
    let beat: u64 = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let id = std::str::from_utf8(parts.next()?).ok()?;
    let json = std::str::from_utf8(record)
        .ok()?
        .splitn(5, '\n')
        .nth(4)
        .unwrap_or("");
    let mut summary = serde_json::from_str::<InstanceSummary>(json).unwrap_or_else(|_| {
        InstanceSummary::new(id, dc, condition, vec!["unreadable".to_owned()], "")
    });
    id.clone_into(&mut summary.instance_id);
    dc.clone_into(&mut summary.datacenter);
    summary.condition = condition;
    let age = now.saturating_sub(beat);
    Some(InstanceView {
        summary,
        age_ms: age,
        stale: u128::from(age) >= ttl.as_millis() || beat > now + 1_000,
    })
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || text.len() > 2 * 512 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let member = b"east\x000\x00000001700000000\x00a1".to_vec();
        assert_eq!(unhex(&hex(&member)), Some(member));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
        let query = InstanceQuery {
            datacenter: Some("west".into()),
            cursor: Some(hex(b"east\x00")),
            limit: 10,
        };
        assert!(page_bounds(&query).is_err());
    }

    #[test]
    fn an_instance_is_named_by_its_key_not_by_what_it_says() {
        let member = b"east\x003\x00000000000001000\x00a1";
        let record = b"east\n3\n0\n1000\n{\"instanceId\":\"impostor\",\"datacenter\":\"west\",\"condition\":\"OK\",\"holds\":[],\"version\":\"1\"}";
        let view = instance_of(member, record, 1500, Duration::from_secs(3)).unwrap();
        assert_eq!(view.summary.instance_id, "a1");
        assert_eq!(view.summary.datacenter, "east");
        assert_eq!(view.summary.condition, CheckStatus::Outage);
        assert_eq!(view.age_ms, 500);
        // Garbage in the record: still listed, as unreadable.
        let view = instance_of(member, b"x", 1500, Duration::from_secs(3)).unwrap();
        assert_eq!(view.summary.holds, ["unreadable"]);
        // Stamped in the future: stale.
        let view = instance_of(member, record, 0, Duration::from_secs(3)).unwrap();
        assert!(view.stale);
    }
}
