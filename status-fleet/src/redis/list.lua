local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- ARGV[5] = 'rev': the worst first (ZREVRANGEBYLEX, ARGV[1] the upper bound).
local order = ARGV[5] == 'rev' and 'ZREVRANGEBYLEX' or 'ZRANGEBYLEX'
local ok, members = pcall(redis.call, order, KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
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
