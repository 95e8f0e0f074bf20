-- The rows a failing instance is judged by, when it is not sent what fails across the
-- fleet: `dc \t dependency \t level \t count` a line, as the upkeep writes them. (Put in
-- each script that needs it, after its `call`, `dc`, `failing_lines` and `v2_suffix`; a
-- function is made at every run of the line that makes it: only for a beat that fails
-- something.)
local own_rows
if failing_lines ~= '' then
  own_rows = function(fails, bridged)
    if #fails == 0 then return '' end
    local fields = {}
    for _, f in ipairs(fails) do
      for lvl = 1, 3 do fields[#fields + 1] = dc .. '\t' .. f[1] .. '\t' .. lvl end
    end
    local got = call('HMGET', KEYS[5], unpack(fields))
    local prefix = bridged == '1' and string.match(KEYS[1], '^(.*)' .. v2_suffix)
    local before = prefix and redis.pcall('HMGET', prefix .. ':fcount', unpack(fields))
    if type(before) ~= 'table' or before.err then before = {} end
    local lines = {}
    for i, field in ipairs(fields) do
      local n = (tonumber(got[i]) or 0) + math.max(tonumber(before[i]) or 0, 0)
      if n > 0 then lines[#lines + 1] = field .. '\t' .. n end
    end
    return table.concat(lines, '\n')
  end
end
