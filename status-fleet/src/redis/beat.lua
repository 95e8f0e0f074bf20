-- (The store puts its settings before this, as numbers in the script's text, parsed once when
-- Redis loads it: `ttl`, `every`, `retire`, `limit`, `max_datacenters`, `max_rows`,
-- `wide_budget`.)
local call = redis.call
local id, dc, cond, serving, json, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[8]
-- The digest of its summary (`ARGV[14]`, the client's: up to 16 hex digits), and the summary
-- itself, or `''` when the client holds the one its store has as unchanged: that one stays.
local digest = ARGV[14] or ''
-- (Every beat not at rest comes here: what it does not need is not parsed, numbers are
-- formatted only where a command takes them, and strings compare by identity, as Lua interns
-- them.)
if not (cond == '0' or cond == '1' or cond == '2' or cond == '3') or
    not (serving == '0' or serving == '1') then
  return {'bad_state'}
end
if #json > limit then return {'too_large'} end
-- What this instance's last beat left, and what the fleet's upkeep left, in one read of two
-- fields: who holds it and what it failed (`id \0own`: `owner \t sequence \t dc \t index \t
-- beat \t digest`, the owner, its last beat's number, data center, that data center's index
-- and beat, the digest of the summary its record holds (none before this version: then
-- the summary is sent again), then, if it failed anything, a line each,
-- `\n dependency \t level`); and the fleet's (`\0fleet`: `at \t failing_at \t settling \t
-- past \t bridged \t counts_at`: when the counts were made, when what fails last changed,
-- since when the store is settling if it is, `1` if what fails is too large to hand to
-- every instance, `1` while the keys of a version before are counted too, when the counts
-- last changed). Its record (`id`) is not read: the holder's field says all a beat needs
-- of it. (Each field read is a lookup and a string handed to Lua: two.)
local own_field = id .. '\0own'
local rec = redis.pcall('HMGET', KEYS[1], own_field, '\0fleet')
local broken = type(rec) ~= 'table' or rec.err
if broken then rec = {} end
local held, fleet = rec[1], rec[2]
local seq = ARGV[11]
local deadline = ARGV[12]
--[[ clock.lua ]]
-- The keys of the versions before this one's (`{K}:live`, `{K}:dcs`, `{K}:fail`,
-- `{K}:fcount`: one member an instance by lex, no index) are under the same hash tag, so in
-- the same slot as `KEYS`; named here from `KEYS[1]`, not passed, as only the upkeep and a
-- failing instance's own rows read them, and only while they exist. During a rolling
-- upgrade the instances of a version before beat there: they are counted with this
-- version's, so that a new version failing on its own instances is seen as theirs, not as
-- the data center's, and the other way round.
local v2_suffix = ':v2:inst$'
-- The failing dependencies: one line each, `dependency \t level` (1 MINOR … 3 OUTAGE), at
-- most 32, ids as status-core's.
local failing_lines = ARGV[9] or ''
--[[ rows.lua ]]
local at, failing_at, settling_mark, past, bridged, counts_at = nil, nil, nil, nil, nil, nil
if fleet then
  at, failing_at, settling_mark, past, bridged, counts_at =
    string.match(fleet, '^(%d+)\t(%d+)\t(%d*)\t(1?)\t(1?)\t?(%d*)$')
  if settling_mark == '' then settling_mark = nil end
  -- (None, from a store written before counts were stamped by their change: when made.)
  if counts_at == '' then counts_at = at end
end
-- What fails across the fleet goes to this instance when it asks (`ARGV[13]`: someone looks
-- at the fleet through it), or when handing it to every instance costs at most
-- `wide_budget` bytes; otherwise it gets only the rows it is judged by: its own failing
-- dependencies in its data center, at every level (O(its failing dependencies)).
local wide = ARGV[13] == '1' or past ~= '1'
-- A beat older than one this process already had taken (sent, given up as late, its
-- connection dropped, then delivered after a newer one: a packet retransmitted for seconds)
-- changes nothing: it would write a past condition, stamped now, as fresh. (Sequence numbers
-- are decimal digits without leading zeros, compared as such: by length, then as text.)
if seq and not string.find(seq, '^[1-9]%d*$') then seq = nil end
local holder, held_seq, pdc, pindex, pbeat, held_digest, listed = nil, nil, nil, nil, nil, nil, nil
if held then
  local o, n, d, x, b, h, f =
    string.match(held, '^([^\t]*)\t(%d+)\t([^\t\n]*)\t(%d+)\t(%d+)\t?(%x*)\n?(.*)$')
  if o then
    holder, held_seq, pdc, pindex, pbeat, held_digest = o, n, d, x, b, h
    listed = f ~= '' and f or nil
  end
  -- (`0`, or digits with a leading zero, which no beat writes: no number to compare with.)
  if held_seq and string.byte(held_seq, 1) == 48 then held_seq = nil end
end
if seq and held_seq and holder == owner and
    (#seq < #held_seq or (#seq == #held_seq and seq <= held_seq)) then
  return {'late'}
end
local fails = {}
if failing_lines ~= '' then for line in string.gmatch(failing_lines, '[^\n]+') do
  local dep, lvl = string.match(line, '^([a-z0-9][a-z0-9%._%-]*)\t([1-3])$')
  if not dep or #dep > 128 or #fails >= 32 then return {'bad_failing'} end
  fails[#fails + 1] = {dep, lvl}
end end
local keep = ttl * 10
-- (A key of the wrong type under the records: healed now, not at the next upkeep.)
local counted_at = not broken and at and tonumber(at)
local fresh = counted_at and counted_at > now - every and counted_at <= now
local healed = 0
if not fresh then
  local types = {'hash', 'zset', 'hash', 'zset', 'hash'}
  for i = 1, 5 do
    local kind = call('TYPE', KEYS[i])['ok']
    if kind ~= 'none' and kind ~= types[i] then healed = healed + 1 end
  end
  -- A key of the wrong type: every key goes (members without records would count twice),
  -- and the instances rebuild them at their next beat.
  if healed > 0 then
    call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
    held, holder, pdc, pindex, pbeat, held_digest, listed = nil, nil, nil, nil, nil, nil, nil
    at, settling_mark, failing_at, counts_at = nil, nil, nil, nil
  end
  -- A store found empty (new, flushed, restarted, healed), or not counted for half a TTL
  -- (no beat reached it for longer than one beat period and its jitter: a replica just
  -- promoted, a store unreachable), is settling for a TTL: the instances that beat
  -- meanwhile are not the fleet, and the others' last beats may be older than the TTL.
  local counted = tonumber(at)
  -- (Written with the counts, at the end of the upkeep this beat runs.)
  if call('EXISTS', KEYS[1]) == 0 or (counted and counted < now - ttl / 2) then
    settling_mark = stamp
  end
end

-- One id, one process: another's fresh record is never replaced.
if holder and holder ~= owner and pbeat then
  local b = tonumber(pbeat)
  if b > now - ttl and b <= now + ttl then return {'id_taken', now, pdc} end
end
-- A beat without its summary keeps the one its record holds, if that is the one the client
-- names, of the same digest (whoever wrote it: the same summary). Otherwise (a store
-- flushed, healed or failed over, another process's summary, a record of a version before)
-- it changes nothing but what it healed (said with it) and asks for the summary (`resend`):
-- the client sends the beat again with it.
if json == '' and (held_digest ~= digest or digest == '') then
  return {'resend', now, healed}
end
-- Its data center's index (`{K}:dcs`: name → index, below `max_datacenters`): known
-- without a lookup from its last beat when it beats from the same one and the counts the
-- client holds name it (a data center with a member is never forgotten, so its index is
-- never handed to another; one lost from `{K}:dcs` is missing from the next counts, and
-- looked up again). A new one past `max_datacenters` is refused, so the upkeep's cost (it
-- counts every data center) stays bounded whatever names the beats bring.
-- (Written back as read: a number made a string again would go through `%.14g`.)
local index, index_text = pdc == dc and ARGV[7] == '1' and tonumber(pindex), pindex
if not (index and index < max_datacenters) then
  index = tonumber(call('HGET', KEYS[3], dc))
  if not (index and index >= 0 and index < max_datacenters and index % 1 == 0) then
    local taken, known = {}, 0
    local all = call('HGETALL', KEYS[3])
    for i = 1, #all, 2 do
      -- (Its own name, with an index no beat writes, is not one more.)
      if string.byte(all[i], 1) ~= 0 and all[i] ~= dc then
        known = known + 1
        local x = tonumber(all[i + 1])
        if x then taken[x] = true end
      end
    end
    if known >= max_datacenters then return {'too_many_datacenters'} end
    index = 0
    while taken[index] do index = index + 1 end
    call('HSET', KEYS[3], dc, index)
  end
  index_text = string.format('%d', index)
end
-- Its member of `{K}:live`: its id, scored by its group (data center, condition, serving)
-- above its beat, `group * 2^42 + beat`, so that one `ZADD` moves it and a group's fresh
-- members are one range. (Below 2^53: exact in a double, and in `%d`.)
local span = 4398046511104
call('ZADD', KEYS[2], string.format('%d', ((index * 4 + cond) * 2 + serving) * span + now), id)
-- Its failing dependencies: a member of `{K}:fail` each (`dc \0 dependency \0 level \0 id`,
-- scored by its beat). A beat moves their scores; what it no longer fails (or fails from
-- another data center) goes. Each member that comes or goes is counted (`{K}:fcount`).
-- (Most beats fail nothing, now as at their last beat: they skip all of it.)
if #fails > 0 or listed then
  -- What fails, counted: `{K}:fcount` holds, per `dc \t dependency \t level`, the members
  -- of `{K}:fail`; every member that comes or goes moves it, in this script. (A function is
  -- made at every run of the line that makes it: only here, and not at every beat. Numbers
  -- go to Redis as text: one passed as a number is formatted with `%.17g` at each call.)
  local function count(fdc, dep, lvl, by)
    local field = fdc .. '\t' .. dep .. '\t' .. lvl
    if call('HINCRBY', KEYS[5], field, by) <= 0 then call('HDEL', KEYS[5], field) end
  end
  local want = {}
  for _, f in ipairs(fails) do want[dc .. '\0' .. f[1] .. '\0' .. f[2] .. '\0' .. id] = f end
  local moved = false
  -- What its last beat failed counts only with the data center of that beat.
  if listed and pdc then
    local n = 0
    for line in string.gmatch(listed, '[^\n]+') do
      n = n + 1
      if n > 32 then break end
      local dep, lvl = string.match(line, '^([^\t%z]+)\t([1-3])$')
      if dep then
        local m = pdc .. '\0' .. dep .. '\0' .. lvl .. '\0' .. id
        if not want[m] and call('ZREM', KEYS[4], m) == 1 then
          count(pdc, dep, lvl, '-1')
          moved = true
        end
      end
    end
  end
  if #fails > 0 then
    for m, f in pairs(want) do
      if call('ZADD', KEYS[4], stamp, m) == 1 then
        count(dc, f[1], f[2], '1')
        moved = true
      end
    end
  end
  if moved then call('HSET', KEYS[3], '\0failing_moved', stamp) end
end
-- Who holds it with what it fails, and its record when the summary came: one write. (The
-- record's beat is when its summary was written; the member's score holds the last beat.)
if json ~= '' and not (#digest <= 16 and string.find(digest, '^%x*$')) then digest = '' end
local own = owner .. '\t' .. (seq or '0') .. '\t' .. dc .. '\t' .. index_text .. '\t' .. stamp
if digest ~= '' then own = own .. '\t' .. digest end
if #fails > 0 then own = own .. '\n' .. failing_lines end
if json == '' then
  call('HSET', KEYS[1], own_field, own)
else
  call('HSET', KEYS[1], id, dc .. '\n' .. cond .. '\n' .. serving .. '\n' .. stamp .. '\n' .. json,
    own_field, own)
end

-- The counts, unless the client holds these already (named by when they last changed, not
-- by when they were made: most upkeeps count what the last one did, and a fleet's
-- instances each beat once for many upkeeps); what fails, likewise, by when it last
-- changed (it is sent again only then: it grows with the failing dependencies). (Each read
-- only when sent: it may be kilobytes, and every beat not at rest comes here.)
-- Every answer that goes the whole way ends with this instance's data center's index and
-- the token a beat at rest names the fleet's field by (its field but for its time, so
-- whether the store settles too): the client's next beat may then be one at rest (`rest.lua`).
local sent_counts, sent_failing, rest = false, false, false
if fresh then
  if counts_at ~= ARGV[6] then sent_counts = call('HGET', KEYS[3], '\0counts') end
  failing_at = failing_at or '0'
  rest = string.sub(fleet, string.find(fleet, '\t', 1, true) + 1)
  if wide then
    if failing_at ~= ARGV[10] then sent_failing = call('HGET', KEYS[3], '\0failing') or '' end
    return {settling_mark and 'settling' or 'ok', now, 0, 0, counts_at, sent_counts, sent_failing,
      failing_at, false, index, rest}
  end
end

if fresh then
  return {settling_mark and 'settling' or 'ok', now, 0, 0, counts_at, sent_counts, false,
    failing_at, own_rows and own_rows(fails, bridged) or '', index, rest}
end

-- The upkeep.
local retired = 0
-- Members unheard of for ten TTLs (or stamped in the future) go, and their records with
-- them (one member an id: it is always the record's own).
local function retire_members(members)
  for _, rid in ipairs(members) do
    call('ZREM', KEYS[2], rid)
    call('HDEL', KEYS[1], rid, rid .. '\0own')
    retired = retired + 1
  end
end
for _, k in ipairs(KEYS) do call('PEXPIRE', k, keep) end
local rows = {}
local function at_score(x) return string.format('%d', x) end
local names = call('HGETALL', KEYS[3])
local fleet_size = 0
for i = 1, #names, 2 do
  local name, index = names[i], tonumber(names[i + 1])
  -- (An index no beat writes, garbage: the data center is forgotten, and its instances,
  -- missing from the counts, index it again at their next beat.)
  if index and (index < 0 or index >= 256 or index % 1 ~= 0) then index = nil end
  if string.byte(name, 1) ~= 0 then
    local counts = {0, 0, 0, 0, 0}
    if index then
      for c = 0, 3 do
        for s = 0, 1 do
          local base = ((index * 4 + c) * 2 + s) * span
          retire_members(call('ZRANGEBYSCORE', KEYS[2], at_score(base), '(' .. at_score(base + now - keep), 'LIMIT', 0, retire))
          retire_members(call('ZRANGEBYSCORE', KEYS[2], '(' .. at_score(base + now + keep), '(' .. at_score(base + span), 'LIMIT', 0, retire))
          local n = call('ZCOUNT', KEYS[2], at_score(base + now - ttl + 1), at_score(base + now + ttl))
          counts[c + 1] = counts[c + 1] + n
          if s == 1 then counts[5] = counts[5] + n end
        end
      end
    end
    if not index or call('ZCOUNT', KEYS[2], at_score(index * 8 * span), '(' .. at_score((index + 1) * 8 * span)) == 0 then
      call('HDEL', KEYS[3], name)
    else
      table.insert(rows, name .. '\t' .. table.concat(counts, '\t'))
      fleet_size = fleet_size + counts[1] + counts[2] + counts[3] + counts[4]
    end
  end
end
-- The instances of a version before (see `v2_suffix`), while its keys are there: each data
-- center's fresh members of `{K}:live` by condition, added to the rows (ten TTLs after the
-- last of them stopped beating, its keys expire and this ends). A key of theirs that cannot
-- be read is left out, never failing the beat.
local prefix = string.match(KEYS[1], '^(.*)' .. v2_suffix)
local bridge = prefix and call('EXISTS', prefix .. ':live') == 1
if bridge then
  local before, before_size = {}, 0
  local ok = pcall(function()
    local function pad(digits) return string.rep('0', 15 - #digits) .. digits end
    local from, to = pad(tostring(now - ttl + 1)), pad(tostring(now + ttl + 1))
    for _, name in ipairs(call('HKEYS', prefix .. ':dcs')) do
      if string.byte(name, 1) ~= 0 and not string.find(name, '[\t\n]') then
        local counts = {0, 0, 0, 0, 0}
        for c = 0, 3 do
          for s = 0, 1 do
            local p = name .. '\0' .. c .. s .. '\0'
            local n = call('ZLEXCOUNT', prefix .. ':live', '[' .. p .. from, '(' .. p .. to)
            counts[c + 1] = counts[c + 1] + n
            if s == 1 then counts[5] = counts[5] + n end
          end
        end
        local fresh = counts[1] + counts[2] + counts[3] + counts[4]
        if fresh > 0 then before[name], before_size = counts, before_size + fresh end
      end
    end
  end)
  if ok then
    fleet_size = fleet_size + before_size
    for i, row in ipairs(rows) do
      local name, a, b, c, d, e = string.match(row, '^(.*)\t(%d+)\t(%d+)\t(%d+)\t(%d+)\t(%d+)$')
      local o = name and before[name]
      if o then
        rows[i] = name .. '\t' .. (a + o[1]) .. '\t' .. (b + o[2]) .. '\t' .. (c + o[3]) .. '\t' ..
          (d + o[4]) .. '\t' .. (e + o[5])
        before[name] = nil
      end
    end
    for name, o in pairs(before) do
      table.insert(rows, name .. '\t' .. table.concat(o, '\t'))
    end
  end
end
local counts = table.concat(rows, '\n')

-- What fails: members not beaten for a TTL (or stamped in the future) go, counted down, and
-- when the counts moved since they were last read out, they are read out again: O(F) for F
-- failing (data center, dependency, level), at most `max_rows` rows, only when they moved.
local gone = call('ZRANGEBYSCORE', KEYS[4], '-inf', now - ttl, 'LIMIT', 0, retire * 4)
for _, m in ipairs(call('ZRANGEBYSCORE', KEYS[4], '(' .. (now + ttl), '+inf', 'LIMIT', 0, retire)) do
  table.insert(gone, m)
end
for _, m in ipairs(gone) do
  call('ZREM', KEYS[4], m)
  local fdc, dep, lvl = string.match(m, '^([^%z]*)%z([^%z]+)%z([1-3])%z')
  local field = fdc and fdc .. '\t' .. dep .. '\t' .. lvl
  if field and call('HINCRBY', KEYS[5], field, -1) <= 0 then call('HDEL', KEYS[5], field) end
  retired = retired + 1
end
-- A version before's failing members not beaten for a TTL go too, counted down as its own
-- upkeep would (its instances may all have stopped: none runs it any more).
local before_rows = {}
if bridge then
  pcall(function()
    local fail, fcount = prefix .. ':fail', prefix .. ':fcount'
    local stale = call('ZRANGEBYSCORE', fail, '-inf', now - ttl, 'LIMIT', 0, retire * 4)
    for _, m in ipairs(call('ZRANGEBYSCORE', fail, '(' .. (now + ttl), '+inf', 'LIMIT', 0, retire)) do
      table.insert(stale, m)
    end
    for _, m in ipairs(stale) do
      call('ZREM', fail, m)
      local fdc, dep, lvl = string.match(m, '^([^%z]*)%z([^%z]+)%z([1-3])%z')
      if fdc then
        local field = fdc .. '\t' .. dep .. '\t' .. lvl
        if call('HINCRBY', fcount, field, -1) <= 0 then call('HDEL', fcount, field) end
      end
    end
    before_rows = call('HGETALL', fcount)
  end)
end
local pass = call('HMGET', KEYS[3], '\0failing', '\0failing_moved', '\0failing_built', '\0counts')
local failing = pass[1] or ''
failing_at = failing_at or '0'
-- (While bridged, read out at every upkeep: the other version's beats move its counts.)
if #gone > 0 or bridge or not pass[3] or (pass[2] and tonumber(pass[2]) >= tonumber(pass[3])) then
  local frows, counted = {}, {}
  local all = call('HGETALL', KEYS[5])
  -- Past 64 rows, the counts are kept a hash table: a failing instance's beat looks up its
  -- own rows one by one, and Redis keeps a small hash as a list it scans (up to 512 fields
  -- by default: at 10,000 instances, 5 % failing, its 470 rows made every beat 11 % dearer
  -- on average). A field too long for such a list makes it a table for good; it is no row
  -- (no tab), and counts for nothing.
  if #all > 128 then
    call('HSETNX', KEYS[5], '\0table', 'this hash is kept a table (a field past 64 bytes): ' ..
      'its rows are looked up one by one')
  end
  for _, rows_of in ipairs({all, before_rows}) do
    for i = 1, #rows_of, 2 do
      local n = tonumber(rows_of[i + 1])
      if n and n > 0 and string.find(rows_of[i], '^[^\t]*\t[^\t]+\t[1-3]$') then
        counted[rows_of[i]] = (counted[rows_of[i]] or 0) + n
      end
    end
  end
  for field, n in pairs(counted) do
    if #frows >= max_rows then break end
    table.insert(frows, field .. '\t' .. n)
  end
  table.sort(frows)
  local text = table.concat(frows, '\n')
  -- Every copy handed out goes to every instance (kilobytes each: 100,000 instances make
  -- gigabytes of one change), so a change is handed out at once only when it says something
  -- new: a row that comes or goes, or a count moved by more than an eighth (any move of a
  -- count under eight). Counts drifting by less wait for the copy to be a TTL old.
  local published = tonumber(failing_at) or 0
  local held = text ~= failing and failing_at ~= '0' and published <= now
    and published > now - ttl
  if held then
    local rows = 0
    for line in string.gmatch(failing, '[^\n]+') do
      rows = rows + 1
      local field, o = string.match(line, '^(.*)\t(%d+)$')
      local n = field and counted[field]
      o = tonumber(o)
      if not n or not o or math.abs(n - o) * 8 > o then held = false break end
    end
    held = held and rows == #frows
  end
  if held then
    -- Held back: built again at the next upkeep, until it is handed out.
    call('HDEL', KEYS[3], '\0failing_built')
  else
    if text ~= failing or failing_at == '0' then failing, failing_at = text, tostring(now) end
    call('HSET', KEYS[3], '\0failing', failing, '\0failing_built', now)
  end
end
local settling = settling_mark
if settling and tonumber(settling) <= now - ttl then settling = nil end
-- Handed to every instance, what fails would cost the store its size once per instance at
-- each change: past the budget, each gets only its own rows unless it asks.
local over = fleet_size * #failing > wide_budget
wide = ARGV[13] == '1' or not over
-- The counts keep their stamp while they say the same.
if counts ~= pass[4] or not counts_at then
  counts_at = stamp
  call('HSET', KEYS[3], '\0counts', counts)
end
local tail = failing_at .. '\t' .. (settling or '') .. '\t' .. (over and '1' or '') .. '\t' ..
  (bridge and '1' or '') .. '\t' .. counts_at
call('HSET', KEYS[1], '\0fleet', stamp .. '\t' .. tail)
rest = tail
sent_counts = counts_at ~= ARGV[6] and counts
if not wide then
  return {settling and 'settling' or 'ok', now, healed, retired, counts_at, sent_counts, false,
    failing_at, own_rows and own_rows(fails, bridged) or '', index, rest}
end
local sent = false
if failing_at ~= ARGV[10] then sent = failing end
return {settling and 'settling' or 'ok', now, healed, retired, counts_at, sent_counts, sent,
  failing_at, false, index, rest}
