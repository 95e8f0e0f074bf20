-- The server's clock in milliseconds, as digits (`stamp`, written in records) and as a
-- number (`now`). A beat run after its deadline (`deadline`, the script's: the client gave
-- up on it; the network delivered it late) changes nothing: it would write a condition of
-- seconds ago, stamped now, as fresh. (Milliseconds as digits, no leading zero: compared by
-- length, then as text; `0`, none. Put in each script where it says `--[[ clock.lua ]]`.)
local t = call('TIME')
local micros = t[2]
local stamp = #micros == 6 and t[1] .. string.sub(micros, 1, 3) or
  string.format('%s%03d', t[1], micros / 1000)
local now = tonumber(stamp)
if deadline and deadline ~= '0' and string.find(deadline, '^[1-9]%d*$') and
    (#stamp > #deadline or (#stamp == #deadline and stamp > deadline)) then
  return {'late', now}
end
