-- The fleet's voice leases: one per data center and failing dependency (the field
-- `datacenter \t dependency`), `state \n holder \n expiry` in the hash KEYS[1], expiring by
-- the server's clock. ARGV: op (claim, takeover, resolve, peek), field, holder, ttl in ms.
-- Answers the state after (free, open, resolved), its holder, and whether what was held
-- was forged ('1': no script wrote it, or its expiry is further ahead than twice the TTL).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op, name, holder, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local ok, v = pcall(redis.call, 'HGET', KEYS[1], name)
if not ok then
  -- Not a hash: healed, as the beat heals its keys.
  redis.call('DEL', KEYS[1])
  v = false
end
local state, who, exp, forged = 'free', '', 0, '0'
if v then
  state, who, exp = string.match(v, '^(%l+)\n([^\n]*)\n(%d+)$')
  exp = tonumber(exp)
  if not state or (state ~= 'open' and state ~= 'resolved') or not exp or exp > now + 2 * ttl then
    -- What no script wrote: free, and said.
    state, who, forged = 'free', '', '1'
  elseif exp <= now then
    -- A lease past its time.
    state, who = 'free', ''
  end
end
local function set(s)
  redis.call('HSET', KEYS[1], name, s .. '\n' .. holder .. '\n' .. (now + ttl))
  redis.call('PEXPIRE', KEYS[1], math.max(ttl * 10, 86400000))
  return {s, holder, forged}
end
if op == 'claim' and (state ~= 'open' or who == holder) then return set('open') end
if op == 'takeover' and (state == 'free' or (state == 'open' and who == holder)) then return set('open') end
if op == 'resolve' and state == 'open' and who == holder then return set('resolved') end
return {state, who, forged}
