-- (The store puts its settings before this, as in the beat's script: this one reads `every`.)
-- A beat at rest: the same process, data center, index, summary and failing dependencies as
-- its last beat; the fleet's field as the client last heard it; no upkeep due. The client
-- names its last beat taken (`ARGV[8]` its data center's index, `ARGV[9]` its number,
-- `ARGV[10]` its time, as the answer told them; `ARGV[11]` the digest of its summary) and
-- the fleet's field but for its time (`ARGV[12]`, the token the last answer handed out): the
-- holder's field is then exactly what the store would write from them, so one comparison
-- checks every field a beat would parse, and a beat delivered after a newer one names a
-- field no longer there. It moves its member (and its failing members), writes its field,
-- and answers its time alone: nothing healed, retired or sent, as the client holds it; or,
-- failing past the budget, its time and its own rows. Anything else answers nil, and the
-- client sends the beat the whole way (the beat's script); one run after its deadline
-- answers `late` and the server's time, as there.
-- KEYS: the records (`{K}:v2:inst`) and the members (`{K}:v2:live`); when it fails
-- something (`ARGV[13]`, its lines; `ARGV[14]`, `1` when someone looks through it), the
-- data centers, failing members and their counts too. (Only what a beat at rest uses is
-- sent: every argument is a string made for Lua at every run.)
local call = redis.call
if #ARGV < 12 then return false end
local id, dc, cond, serving, seq, x, last = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[6], ARGV[8], ARGV[9]
if not (cond == '0' or cond == '1' or cond == '2' or cond == '3') or
    not (serving == '0' or serving == '1') or not string.find(seq, '^[1-9]%d*$') or
    not (#seq > #last or (#seq == #last and seq > last)) then
  return false
end
local own_field = id .. '\0own'
local rec = redis.pcall('HMGET', KEYS[1], own_field, '\0fleet')
if type(rec) ~= 'table' or rec.err then return false end
local held, fleet = rec[1], rec[2]
if not held or not fleet then return false end
local deadline = ARGV[7]
--[[ clock.lua ]]
local owner, digest, failing_lines = ARGV[5], ARGV[11], ARGV[13] or ''
local named = owner .. '\t' .. last .. '\t' .. dc .. '\t' .. x .. '\t' .. ARGV[10] .. '\t' .. digest
if failing_lines ~= '' then named = named .. '\n' .. failing_lines end
local p = string.find(fleet, '\t', 1, true)
if held ~= named or not p or string.sub(fleet, p + 1) ~= ARGV[12] then return false end
local counted = tonumber(string.sub(fleet, 1, p - 1))
if not (counted and counted > now - every and counted <= now) then return false end
call('ZADD', KEYS[2], string.format('%d', ((x * 4 + cond) * 2 + serving) * 4398046511104 + now), id)
local own = owner .. '\t' .. seq .. '\t' .. dc .. '\t' .. x .. '\t' .. stamp .. '\t' .. digest
if failing_lines == '' then
  call('HSET', KEYS[1], own_field, own)
  return now
end
call('HSET', KEYS[1], own_field, own .. '\n' .. failing_lines)
local v2_suffix = ':v2:inst$'
--[[ rows.lua ]]
-- What it fails is what its last beat failed (the store wrote these lines after checking
-- them): each member's score moved. One gone meanwhile (retired by an upkeep while this
-- instance was silent for a TTL) comes back, counted.
local fails, moved = {}, false
for dep, lvl in string.gmatch(failing_lines, '([^\t\n]+)\t([1-3])') do
  fails[#fails + 1] = {dep, lvl}
  if call('ZADD', KEYS[4], stamp, dc .. '\0' .. dep .. '\0' .. lvl .. '\0' .. id) == 1 then
    local field = dc .. '\t' .. dep .. '\t' .. lvl
    if call('HINCRBY', KEYS[5], field, '1') <= 0 then call('HDEL', KEYS[5], field) end
    moved = true
  end
end
if moved then call('HSET', KEYS[3], '\0failing_moved', stamp) end
-- (The token's third and fourth fields: what fails past the budget, the keys of a version
-- before counted too.)
local past, bridged = string.match(ARGV[12], '^[^\t]*\t[^\t]*\t(1?)\t(1?)\t')
if ARGV[14] == '1' or past ~= '1' then return now end
return {now, own_rows(fails, bridged)}
