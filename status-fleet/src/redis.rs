//! The fleet in Redis, at a constant cost per instance.
//!
//! One beat of one instance is one script of six commands of O(log N) whatever the fleet's
//! size N; no beat reads another instance's summary. What every instance needs back, each data
//! center's fresh instances by condition and its serving ones, is counted at most every
//! thirtieth of the TTL by whichever beat comes first (O(D log N) for D data centers) and
//! cached for the others. The keys, all under one hash tag so that a Redis Cluster keeps them
//! in one slot (and every key a script touches is passed in `KEYS`):
//!
//! | key | type | what |
//! |---|---|---|
//! | `{K}:inst` | hash | instance id → `dc \n condition \n serving \n beat \n summary JSON` |
//! | `{K}:live` | sorted set, by lex | `dc \0 condition serving \0 beat \0 id`: one member an instance |
//! | `{K}:dcs` | hash | each data center (its value unused); the cached counts and when they were made; the settling mark |
//! | `{K}:own` | hash | instance id → the token of the process that holds it |
//!
//! **One id, one process.** Each [`RedisFleet`] draws a random token; the first process to
//! beat under an id holds it, and a beat under that id with another token is refused
//! (`id_taken`) for as long as the holder's record is fresh: two processes given one id (the
//! pod `web-0` with pid 1 in two data centers) can never overwrite each other's record, and
//! the one refused says so (its `fleet` dependency MAJOR). A holder that stops beating loses
//! the id a TTL later, so a restarted instance takes its id back within a TTL.
//!
//! Counts are `ZLEXCOUNT`s over the members whose beat is younger than the TTL: no instance
//! keeps them up to date, so none can drift. The upkeep also retires a bounded number of
//! instances not heard of for ten TTLs (and any member stamped in the future), and forgets
//! data centers with no instance left.
//!
//! What the store holds is not trusted: an instance's id and data center are its member's, not
//! what its summary says; heartbeats come from the server's clock only; a summary is at most
//! 4 KiB, and a record larger than that is never sent on; a key of the wrong type is deleted
//! (and the instances rebuild it at their next beat) instead of failing every beat of the
//! fleet, and a store found empty, or not reached for half a TTL (a replica just promoted),
//! is *settling* for a TTL: its counts are not the fleet's until every instance has had time
//! to beat. The script says what it healed; the client
//! counts it.

use std::time::Duration;

use status_core::store::{Connection, RedisStore};

use super::{
    hex, unhex, Beat, BeatError, Boxed, Conditions, DatacenterCounts, FleetStore, InstancePage,
    InstanceQuery, InstanceSummary, InstanceView, MAX_PAGE, MAX_SUMMARY,
};
use crate::sync::lock;
use status_core::{CheckStatus, Error};

/// The most instances one upkeep retires (ten upkeeps a second with a TTL of 3 s).
const RETIRE: u32 = 64;

/// The most data centers a fleet in Redis accepts, by default.
pub const DEFAULT_MAX_DATACENTERS: usize = 64;

/// One beat. Always, in O(log N): this instance's record and member moved to the new beat.
/// At most every `ARGV[9]` ms, fleet-wide (the first beat after that does it), the upkeep in
/// O(D log N): keys of the wrong type healed (all go), an empty store marked settling for a
/// TTL, at most `ARGV[7]` members a data center retired (unheard of for ten TTLs, or stamped
/// in the future), data centers with no member forgotten, expiries renewed, and every data
/// center counted into a cache the other beats hand out. Answers `ok` (or `settling`), the
/// server's time, what it healed and retired, when the counts were made, and the counts: one
/// line a data center, `dc \t ok \t minor \t major \t outage \t serving`; nil instead of
/// counts the client says it holds (`ARGV[10]`: when its counts were made).
const BEAT: &str = r"
local id, dc, cond, serving, json, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[12]
local ttl, retire, limit, every = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
if #id == 0 or #id > 128 or string.find(id, '[%z\n]') then return {'bad_id'} end
if #dc == 0 or #dc > 64 or string.find(dc, '[%z\n\t]') then return {'bad_datacenter'} end
if not string.find(cond, '^[0-3]$') or not string.find(serving, '^[01]$') then
  return {'bad_state'}
end
if #json > limit then return {'too_large'} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = ttl * 10
local function pad(ms) return string.format('%015d', ms) end
local function member_of(record, rid)
  local pdc, pcond, pserv, pbeat =
    string.match(record, '^([^\n]*)\n([0-3])\n([01])\n(%d+)\n')
  if not pdc then return nil end
  return pdc .. '\0' .. pcond .. pserv .. '\0' .. pad(tonumber(pbeat)) .. '\0' .. rid
end

local cache = redis.pcall('HMGET', KEYS[3], '\0at', '\0settling')
local fresh = type(cache) == 'table' and not cache.err and cache[1]
  and tonumber(cache[1]) > now - every and tonumber(cache[1]) <= now
local healed = 0
if not fresh then
  local types = {'hash', 'zset', 'hash', 'hash'}
  for i = 1, 4 do
    local kind = redis.call('TYPE', KEYS[i])['ok']
    if kind ~= 'none' and kind ~= types[i] then healed = healed + 1 end
  end
  -- A key of the wrong type: every key goes (members without records would count twice),
  -- and the instances rebuild them at their next beat.
  if healed > 0 then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4]) end
  -- A store found empty (new, flushed, restarted, healed), or not counted for half a TTL
  -- (no beat reached it for longer than one beat period and its jitter: a replica just
  -- promoted, a store unreachable), is settling for a TTL: the instances that beat
  -- meanwhile are not the fleet, and the others' last beats may be older than the TTL.
  local counted = type(cache) == 'table' and not cache.err and tonumber(cache[1])
  if redis.call('EXISTS', KEYS[1]) == 0 or (counted and counted < now - ttl / 2) then
    redis.call('HSET', KEYS[3], '\0settling', now)
  end
end

-- At most ARGV[13] data centers: a new one past that is refused, so the upkeep's cost (it
-- counts every data center) stays bounded whatever names the beats bring.
if redis.call('HEXISTS', KEYS[3], dc) == 0 then
  local known = redis.call('HLEN', KEYS[3])
  for _, special in ipairs({'\0at', '\0counts', '\0settling'}) do
    known = known - redis.call('HEXISTS', KEYS[3], special)
  end
  if known >= tonumber(ARGV[13]) then return {'too_many_datacenters'} end
end
local previous = redis.call('HGET', KEYS[1], id)
-- One id, one process: another's fresh record is never replaced.
local holder = redis.call('HGET', KEYS[4], id)
if holder and holder ~= owner and previous then
  local pdc, pbeat = string.match(previous, '^([^\n]*)\n[0-3]\n[01]\n(%d+)\n')
  pbeat = tonumber(pbeat)
  if pbeat and pbeat > now - ttl and pbeat <= now + ttl then
    return {'id_taken', now, pdc}
  end
end
redis.call('HSET', KEYS[4], id, owner)
if previous then
  local old = member_of(previous, id)
  if old then redis.call('ZREM', KEYS[2], old) end
end
redis.call('HSET', KEYS[1], id, dc .. '\n' .. cond .. '\n' .. serving .. '\n' .. now .. '\n' .. json)
redis.call('ZADD', KEYS[2], 0, dc .. '\0' .. cond .. serving .. '\0' .. pad(now) .. '\0' .. id)
-- A data center the counts do not know yet is known from now on (the client says whether
-- the counts it holds know its own).
if not fresh or ARGV[11] ~= '1' then redis.call('HSET', KEYS[3], dc, '') end

if fresh then
  -- The counts, unless the client holds these already.
  local counts = false
  if cache[1] ~= ARGV[10] then counts = redis.call('HGET', KEYS[3], '\0counts') end
  return {cache[2] and 'settling' or 'ok', now, 0, 0, cache[1], counts}
end

-- The upkeep.
local retired = 0
local function retire_members(members)
  for _, member in ipairs(members) do
    redis.call('ZREM', KEYS[2], member)
    local rid = string.match(member, '^[^%z]*%z[0-3][01]%z%d+%z(.*)$')
    local record = rid and redis.call('HGET', KEYS[1], rid)
    -- The record goes only if this member is its own (not an older one left behind).
    if record and member_of(record, rid) == member then
      redis.call('HDEL', KEYS[1], rid)
      redis.call('HDEL', KEYS[4], rid)
    end
    retired = retired + 1
  end
end
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, keep) end
local rows = {}
local from, to = pad(now - ttl + 1), pad(now + ttl + 1)
local names = redis.call('HKEYS', KEYS[3])
for _, name in ipairs(names) do
  if string.byte(name, 1) ~= 0 then
    local counts = {0, 0, 0, 0, 0}
    for c = 0, 3 do
      for s = 0, 1 do
        local p = name .. '\0' .. c .. s .. '\0'
        retire_members(redis.call('ZRANGEBYLEX', KEYS[2], '[' .. p, '(' .. p .. pad(now - keep), 'LIMIT', 0, retire))
        retire_members(redis.call('ZRANGEBYLEX', KEYS[2], '(' .. p .. pad(now + keep), '[' .. p .. '\255', 'LIMIT', 0, retire))
        local n = redis.call('ZLEXCOUNT', KEYS[2], '[' .. p .. from, '(' .. p .. to)
        counts[c + 1] = counts[c + 1] + n
        if s == 1 then counts[5] = counts[5] + n end
      end
    end
    if redis.call('ZLEXCOUNT', KEYS[2], '[' .. name .. '\0', '(' .. name .. '\1') == 0 then
      redis.call('HDEL', KEYS[3], name)
    else
      table.insert(rows, name .. '\t' .. table.concat(counts, '\t'))
    end
  end
end
local counts = table.concat(rows, '\n')
local settling = tonumber(redis.call('HGET', KEYS[3], '\0settling'))
if settling and settling <= now - ttl then
  redis.call('HDEL', KEYS[3], '\0settling')
  settling = nil
end
redis.call('HSET', KEYS[3], '\0at', now, '\0counts', counts)
return {settling and 'settling' or 'ok', now, healed, retired, now, counts}
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
  local id = string.match(member, '^[^%z]*%z[0-3][01]%z%d+%z(.*)$')
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

/// A fleet kept in Redis (one server, or a cluster: every key under one hash tag).
#[derive(Debug)]
pub struct RedisFleet {
    store: RedisStore,
    /// The last counts read, and when the store made them: sent again only when newer.
    last: std::sync::Mutex<Option<(u64, Vec<DatacenterCounts>)>>,
    keys: [String; 4],
    /// This process's token: the id it beats under is its own while it beats.
    owner: String,
    /// The most data centers the fleet accepts.
    max_datacenters: usize,
    ttl: Duration,
    // Sent by their SHA1 (EVALSHA), the body only when the server does not have it.
    beat: redis::Script,
    list: redis::Script,
}

impl RedisFleet {
    /// The fleet under `key` at `url` (one URL, or a cluster's seed nodes separated by
    /// commas; see [`RedisStore::open`]); an instance is stale `ttl` after its last
    /// heartbeat.
    ///
    /// # Errors
    ///
    /// [`Error::is_invalid`] if `url` is not a Redis URL, or `key` is empty or holds `{`,
    /// `}` or a control character.
    pub fn new(url: &str, key: impl Into<String>, ttl: Duration) -> Result<Self, Error> {
        let store = RedisStore::open(url)?;
        let key = key.into();
        let keys = [
            RedisStore::tagged(&key, "inst")?,
            RedisStore::tagged(&key, "live")?,
            RedisStore::tagged(&key, "dcs")?,
            RedisStore::tagged(&key, "own")?,
        ];
        Ok(Self {
            store,
            last: std::sync::Mutex::new(None),
            keys,
            owner: super::owner_token(),
            max_datacenters: DEFAULT_MAX_DATACENTERS,
            ttl,
            beat: redis::Script::new(BEAT),
            list: redis::Script::new(LIST),
        })
    }

    /// The most data centers the fleet accepts (default [`DEFAULT_MAX_DATACENTERS`], at
    /// least 1): a beat from one more is refused (`too_many_datacenters`, counted), so that
    /// counting them, which every upkeep does, stays bounded. Give every instance the same.
    #[must_use]
    pub fn max_datacenters(mut self, max: usize) -> Self {
        self.max_datacenters = max.max(1);
        self
    }

    /// How often the data centers are counted, fleet-wide: a thirtieth of the TTL (100 ms
    /// for 3 s), between 10 ms and a second. The counts a beat hands out are at most that
    /// old.
    #[must_use]
    pub fn counted_every(&self) -> Duration {
        (self.ttl / 30).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }

    /// The TTL: an instance is stale this long after its last heartbeat.
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    async fn connection(&self) -> Result<Connection, BeatError> {
        self.store
            .connection()
            .await
            .map_err(|e| BeatError::Store(e.to_string()))
    }

    /// Drops the connection: the next call makes a new one. For a call that failed or timed
    /// out, so that a connection still reading a late answer is never reused.
    pub async fn reset(&self) {
        self.store.reset().await;
    }

    /// Where the store is, without credentials.
    #[must_use]
    pub fn describe(&self) -> &str {
        self.store.describe()
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
        // The counts held as this beat leaves: what a nil answer refers to, whatever other
        // beats in flight meanwhile bring back.
        let held = lock(&self.last).clone();
        let (held_at, knows_me) = held.as_ref().map_or((0, false), |(at, counts)| {
            (*at, counts.iter().any(|c| c.datacenter == me.datacenter))
        });
        let mut connection = self.connection().await?;
        let answer: Result<Vec<redis::Value>, _> = self
            .beat
            .key(&self.keys[..])
            .arg(&me.instance_id)
            .arg(&me.datacenter)
            .arg(condition_digit(me.condition))
            .arg(u8::from(me.serving()))
            .arg(json)
            .arg(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX))
            .arg(RETIRE)
            .arg(MAX_SUMMARY)
            .arg(u64::try_from(self.counted_every().as_millis()).unwrap_or(u64::MAX))
            .arg(held_at)
            .arg(u8::from(knows_me))
            .arg(&self.owner)
            .arg(self.max_datacenters)
            .invoke_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.reset().await;
                return Err(BeatError::Store(e.to_string()));
            }
        };
        let (mut beat, sent) = parse_beat(&answer)?;
        if sent {
            let mut last = lock(&self.last);
            if last.as_ref().is_none_or(|(at, _)| *at <= beat.counted_ms) {
                *last = Some((beat.counted_ms, beat.datacenters.clone()));
            }
        } else {
            match held {
                Some((at, counts)) if at == beat.counted_ms => beat.datacenters = counts,
                _ => return Err(BeatError::Store("counts neither sent nor held".into())),
            }
        }
        Ok(beat)
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
            .map_err(|e| Error::unavailable(e.to_string()))?;
        let answer: Result<Vec<Vec<u8>>, _> = self
            .list
            .key(&self.keys[1])
            .key(&self.keys[0])
            .arg(min)
            .arg(max)
            .arg(limit)
            .arg(MAX_SUMMARY + 256)
            .invoke_async(&mut connection)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.reset().await;
                return Err(Error::unavailable(format!("the fleet store failed: {e}")));
            }
        };
        Ok(parse_page(&answer, self.ttl, limit))
    }
}

impl FleetStore for RedisFleet {
    fn ttl(&self) -> Duration {
        self.ttl
    }

    fn beat<'a>(&'a self, me: &'a InstanceSummary) -> Boxed<'a, Result<Beat, BeatError>> {
        Box::pin(RedisFleet::beat(self, me))
    }

    fn instances<'a>(&'a self, query: &'a InstanceQuery) -> Boxed<'a, Result<InstancePage, Error>> {
        Box::pin(RedisFleet::instances(self, query))
    }

    fn reset(&self) -> Boxed<'_, ()> {
        Box::pin(RedisFleet::reset(self))
    }

    fn describe(&self) -> String {
        RedisFleet::describe(self).to_owned()
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

/// The beat, and whether the counts came with it (they do not when the client holds them).
fn parse_beat(answer: &[redis::Value]) -> Result<(Beat, bool), BeatError> {
    let garbage = || BeatError::Store("an answer this client cannot read".to_owned());
    let status = answer.first().and_then(text).ok_or_else(garbage)?;
    if status == "id_taken" {
        return Err(BeatError::IdTaken {
            datacenter: answer.get(2).and_then(text).unwrap_or_default(),
        });
    }
    let settling = status == "settling";
    if status != "ok" && !settling {
        return Err(BeatError::Rejected(match status.as_str() {
            "bad_id" => "bad_id",
            "bad_datacenter" => "bad_datacenter",
            "bad_state" => "bad_state",
            "too_large" => "too_large",
            "too_many_datacenters" => "too_many_datacenters",
            _ => return Err(garbage()),
        }));
    }
    let number = |i: usize| answer.get(i).and_then(integer).ok_or_else(garbage);
    let (now_ms, healed, retired, counted_ms) = (number(1)?, number(2)?, number(3)?, number(4)?);
    let counts = answer.get(5).and_then(text);
    let sent = counts.is_some();
    let counts = counts.unwrap_or_default();
    let mut datacenters = Vec::new();
    for line in counts.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [name, ok, minor, major, outage, serving] = fields[..] else {
            return Err(garbage());
        };
        let count = |v: &str| v.parse::<usize>().map_err(|_| garbage());
        datacenters.push(DatacenterCounts {
            datacenter: name.to_owned(),
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
    Ok((
        Beat {
            now_ms,
            healed,
            retired,
            counted_ms,
            datacenters,
            settling,
            skipped: [0; super::REJECTIONS.len()],
        },
        sent,
    ))
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

/// An instance from its member (`dc \0 condition serving \0 beat \0 id`) and its record;
/// `None` when the member does not parse. The id and data center come from the member, never from the JSON.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let member = b"east\x0001\x00000001700000000\x00a1".to_vec();
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
        let member = b"east\x0030\x00000000000001000\x00a1";
        let record = b"east\n3\n0\n1000\n{\"instanceId\":\"impostor\",\"datacenter\":\"west\",\"condition\":\"OK\",\"holds\":[],\"version\":\"1\"}";
        let view = instance_of(member, record, 1500, Duration::from_secs(3)).unwrap();
        assert_eq!(view.summary.instance_id, "a1");
        assert_eq!(view.summary.datacenter, "east");
        assert_eq!(view.summary.condition, CheckStatus::Outage);
        assert_eq!(view.age_ms, 500);
        // Garbage in the record: still listed, as unreadable.
        let view = instance_of(member, b"x", 1500, Duration::from_secs(3)).unwrap();
        assert_eq!(view.summary.holds, ["unreadable"]);
        // Stamped in the future (past a second of clock skew): stale.
        let future = b"east\x0030\x00000000000009000\x00a1";
        let view = instance_of(future, record, 1500, Duration::from_secs(3)).unwrap();
        assert!(view.stale);
    }
}
