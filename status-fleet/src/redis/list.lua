-- One page of `{K}:live` (KEYS[1]) in the order of its scores (data center by its index,
-- condition, serving, beat; ties by id), with each instance's record (KEYS[2]) and the data
-- centers' names (KEYS[3]). ARGV: the data center ('' for all), the cursor (a member as this
-- script answers them, '' for none), the most members, the largest record sent on, and
-- `rev` for the worst first (from the end). Answers the server's time, then each member as
-- `dc \0 condition serving \0 beat (15 digits) \0 id` and its record ('' when missing, or
-- larger than `ARGV[4]`).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {tostring(now)}
local span = 4398046511104
local function num(x) return string.format('%d', x) end
local ok, all = pcall(redis.call, 'HGETALL', KEYS[3])
if not ok then return out end
local name_of, index_of = {}, {}
for i = 1, #all, 2 do
  local x = tonumber(all[i + 1])
  if string.byte(all[i], 1) ~= 0 and x then name_of[x], index_of[all[i]] = all[i], x end
end
-- A data center's index by its name; `\tindex` for one without a name (forgotten, garbage:
-- a name no instance may have, so not listed), so that a page ending on it has a cursor.
local function index_named(name)
  return index_of[name] or tonumber(string.match(name, '^\t(%d+)$'))
end
local lo, hi = 0, 2048 * span
if ARGV[1] ~= '' then
  local x = index_of[ARGV[1]]
  if not x then return out end
  lo, hi = x * 8 * span, (x + 1) * 8 * span
end
local limit, rev = tonumber(ARGV[3]), ARGV[5] == 'rev'
-- Ids compared byte by byte, as Redis orders the members of one score (Lua's `<` follows
-- the server's locale).
local function less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local taken = {}
local function take(answer)
  for i = 1, #answer, 2 do
    if #taken >= limit then return end
    taken[#taken + 1] = {answer[i], tonumber(answer[i + 1])}
  end
end
local ok2 = pcall(function()
  if ARGV[2] ~= '' then
    -- After the cursor: the members of its score past its id, then those of the scores past it.
    local cdc, c, s, beat, cid = string.match(ARGV[2], '^([^%z]*)%z([0-3])([01])%z(%d+)%z(.*)$')
    local x = cdc and index_named(cdc)
    if not x then return end
    local at = ((x * 4 + c) * 2 + s) * span + tonumber(beat)
    if at < lo or at >= hi then return end
    local ties = redis.call('ZRANGEBYSCORE', KEYS[1], num(at), num(at), 'WITHSCORES', 'LIMIT', 0, 10000)
    if rev then
      for i = #ties - 1, 1, -2 do
        if less(ties[i], cid) then take({ties[i], ties[i + 1]}) end
      end
      take(redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. num(at), num(lo), 'WITHSCORES', 'LIMIT', 0, limit))
    else
      for i = 1, #ties, 2 do
        if less(cid, ties[i]) then take({ties[i], ties[i + 1]}) end
      end
      take(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. num(at), '(' .. num(hi), 'WITHSCORES', 'LIMIT', 0, limit))
    end
  elseif rev then
    take(redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. num(hi), num(lo), 'WITHSCORES', 'LIMIT', 0, limit))
  else
    take(redis.call('ZRANGEBYSCORE', KEYS[1], num(lo), '(' .. num(hi), 'WITHSCORES', 'LIMIT', 0, limit))
  end
end)
if not ok2 then return out end
for _, m in ipairs(taken) do
  local id, score = m[1], m[2]
  local group = math.floor(score / span)
  local beat = score - group * span
  local x, cs = math.floor(group / 8), group % 8
  local member = (name_of[x] or ('\t' .. x)) .. '\0' .. math.floor(cs / 2) .. (cs % 2) .. '\0' ..
    string.format('%015d', beat) .. '\0' .. id
  local ok3, record = pcall(redis.call, 'HGET', KEYS[2], id)
  table.insert(out, member)
  -- A record larger than any beat writes is garbage: never sent on.
  if ok3 and record and #record <= tonumber(ARGV[4]) then
    table.insert(out, record)
  else
    table.insert(out, '')
  end
end
return out
