-- ARGV: prefix, claimant, call ids... Returns the ids that are now this claimant's.
local got = {}
for i = 3, #ARGV do
  if claim(ARGV[i], ARGV[2]) then got[#got + 1] = ARGV[i] end
end
return got
