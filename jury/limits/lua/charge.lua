-- ARGV: prefix, judge, rpm, burst. 0 when a request may go now, else ms to wait.
local P = prefix .. 'j:' .. ARGV[2] .. ':'
return charge(P, tonumber(ARGV[3]), tonumber(ARGV[4]))
