local id, dc, cond, serving, json, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[12]
local ttl, retire, limit, every = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
if not string.find(cond, '^[0-3]$') or not string.find(serving, '^[01]$') then
  return {'bad_state'}
end
if #json > limit then return {'too_large'} end
-- A beat older than one this process already had taken (sent, given up as late, its
-- connection dropped, then delivered after a newer one: a packet retransmitted for seconds)
-- changes nothing: it would write a past condition, stamped now, as fresh. `{K}:own` holds
-- `owner \t sequence` per id (a bare owner, from before: no sequence to compare).
local seq = tonumber(ARGV[17] or '')
local held = redis.pcall('HGET', KEYS[4], id)
if type(held) ~= 'string' then held = nil end
local holder, held_seq = held, nil
if held then
  local o, n = string.match(held, '^(.*)\t(%d+)$')
  if o then holder, held_seq = o, tonumber(n) end
end
if seq and held_seq and holder == owner and seq <= held_seq then return {'late'} end
-- The failing dependencies: one line each, `dependency \t level` (1 MINOR … 3 OUTAGE), at
-- most 32, ids as status-core's.
local fails = {}
for line in string.gmatch(ARGV[14] or '', '[^\n]+') do
  local dep, lvl = string.match(line, '^([a-z0-9][a-z0-9%._%-]*)\t([1-3])$')
  if not dep or #dep > 128 or #fails >= 32 then return {'bad_failing'} end
  table.insert(fails, {dep, lvl})
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A beat run after its deadline (the client gave up on it; the network delivered it late)
-- changes nothing: it would write a condition of seconds ago, stamped now, as fresh.
local deadline = tonumber(ARGV[18] or '') or 0
if deadline > 0 and now > deadline then return {'late', now} end
local keep = ttl * 10
local function pad(ms) return string.format('%015d', ms) end
-- What fails, counted: `{K}:fcount` holds, per `dc \t dependency \t level`, the members of
-- `{K}:fail`; every member that comes or goes moves it, in this script.
local function count(fdc, dep, lvl, by)
  local field = fdc .. '\t' .. dep .. '\t' .. lvl
  if redis.call('HINCRBY', KEYS[7], field, by) <= 0 then redis.call('HDEL', KEYS[7], field) end
end
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
  local types = {'hash', 'zset', 'hash', 'hash', 'zset', 'hash', 'hash'}
  for i = 1, 7 do
    local kind = redis.call('TYPE', KEYS[i])['ok']
    if kind ~= 'none' and kind ~= types[i] then healed = healed + 1 end
  end
  -- A key of the wrong type: every key goes (members without records would count twice),
  -- and the instances rebuild them at their next beat.
  if healed > 0 then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]) end
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
  for _, special in ipairs({'\0at', '\0counts', '\0failing', '\0failing_at', '\0failing_moved',
      '\0failing_built', '\0settling'}) do
    known = known - redis.call('HEXISTS', KEYS[3], special)
  end
  if known >= tonumber(ARGV[13]) then return {'too_many_datacenters'} end
end
local previous = redis.call('HGET', KEYS[1], id)
-- One id, one process: another's fresh record is never replaced.
if holder and holder ~= owner and previous then
  local pdc, pbeat = string.match(previous, '^([^\n]*)\n[0-3]\n[01]\n(%d+)\n')
  pbeat = tonumber(pbeat)
  if pbeat and pbeat > now - ttl and pbeat <= now + ttl then
    return {'id_taken', now, pdc}
  end
end
redis.call('HSET', KEYS[4], id, owner .. '\t' .. (seq or 0))
if previous then
  local old = member_of(previous, id)
  if old then redis.call('ZREM', KEYS[2], old) end
end
-- Its failing dependencies: a member of `{K}:fail` each (`dc \0 dependency \0 level \0 id`,
-- scored by its beat). A beat moves their scores; what it no longer fails (or fails from
-- another data center) goes. Each member that comes or goes is counted (`{K}:fcount`).
local want = {}
for _, f in ipairs(fails) do want[dc .. '\0' .. f[1] .. '\0' .. f[2] .. '\0' .. id] = f end
local moved = false
local pdc = previous and string.match(previous, '^([^\n]*)\n')
-- Looked up only if its last summary said it failed some.
local listed = pdc and string.find(previous, '"failing":', 1, true) and redis.call('HGET', KEYS[6], id)
if listed then
  local n = 0
  for line in string.gmatch(listed, '[^\n]+') do
    n = n + 1
    if n > 32 then break end
    local dep, lvl = string.match(line, '^([^\t%z]+)\t([1-3])$')
    if dep then
      local m = pdc .. '\0' .. dep .. '\0' .. lvl .. '\0' .. id
      if not want[m] and redis.call('ZREM', KEYS[5], m) == 1 then
        count(pdc, dep, lvl, -1)
        moved = true
      end
    end
  end
end
for m, f in pairs(want) do
  if redis.call('ZADD', KEYS[5], now, m) == 1 then
    count(dc, f[1], f[2], 1)
    moved = true
  end
end
if moved then redis.call('HSET', KEYS[3], '\0failing_moved', now) end
if #fails > 0 then
  if listed ~= ARGV[14] then redis.call('HSET', KEYS[6], id, ARGV[14]) end
elseif listed then
  redis.call('HDEL', KEYS[6], id)
end
redis.call('HSET', KEYS[1], id, dc .. '\n' .. cond .. '\n' .. serving .. '\n' .. now .. '\n' .. json)
redis.call('ZADD', KEYS[2], 0, dc .. '\0' .. cond .. serving .. '\0' .. pad(now) .. '\0' .. id)
-- A data center the counts do not know yet is known from now on (the client says whether
-- the counts it holds know its own).
if not fresh or ARGV[11] ~= '1' then redis.call('HSET', KEYS[3], dc, '') end

if fresh then
  -- The counts, unless the client holds these already.
  -- The counts, unless the client holds these already; what fails, likewise, by when it
  -- last changed (it is sent again only then: it grows with the failing dependencies).
  local counts, failing = false, false
  -- (Read only when sent: it may be kilobytes, and every beat comes here.)
  local kept = redis.call('HMGET', KEYS[3], '\0counts', '\0failing_at')
  if cache[1] ~= ARGV[10] then counts = kept[1] end
  local failing_at = kept[2] or '0'
  if failing_at ~= ARGV[16] then failing = redis.call('HGET', KEYS[3], '\0failing') or '' end
  return {cache[2] and 'settling' or 'ok', now, 0, 0, cache[1], counts, failing, failing_at}
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
      redis.call('HDEL', KEYS[6], rid)
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

-- What fails: members not beaten for a TTL (or stamped in the future) go, counted down, and
-- when the counts moved since they were last read out, they are read out again: O(F) for F
-- failing (data center, dependency, level), at most ARGV[15] rows, only when they moved.
local gone = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now - ttl, 'LIMIT', 0, retire * 4)
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '(' .. (now + ttl), '+inf', 'LIMIT', 0, retire)) do
  table.insert(gone, m)
end
for _, m in ipairs(gone) do
  redis.call('ZREM', KEYS[5], m)
  local fdc, dep, lvl = string.match(m, '^([^%z]*)%z([^%z]+)%z([1-3])%z')
  if fdc then count(fdc, dep, lvl, -1) end
  retired = retired + 1
end
local pass = redis.call('HMGET', KEYS[3], '\0failing', '\0failing_at', '\0failing_moved', '\0failing_built')
local failing, failing_at = pass[1] or '', pass[2] or '0'
if #gone > 0 or not pass[4] or (pass[3] and tonumber(pass[3]) >= tonumber(pass[4])) then
  local frows = {}
  local all = redis.call('HGETALL', KEYS[7])
  for i = 1, #all, 2 do
    local n = tonumber(all[i + 1])
    if #frows < tonumber(ARGV[15]) and n and n > 0 and string.find(all[i], '^[^\t]*\t[^\t]+\t[1-3]$') then
      table.insert(frows, all[i] .. '\t' .. n)
    end
  end
  table.sort(frows)
  local text = table.concat(frows, '\n')
  if text ~= failing or failing_at == '0' then failing, failing_at = text, tostring(now) end
  redis.call('HSET', KEYS[3], '\0failing', failing, '\0failing_at', failing_at, '\0failing_built', now)
end
local settling = tonumber(redis.call('HGET', KEYS[3], '\0settling'))
if settling and settling <= now - ttl then
  redis.call('HDEL', KEYS[3], '\0settling')
  settling = nil
end
redis.call('HSET', KEYS[3], '\0at', now, '\0counts', counts)
local sent = false
if failing_at ~= ARGV[16] then sent = failing end
return {settling and 'settling' or 'ok', now, healed, retired, now, counts, sent, failing_at}
