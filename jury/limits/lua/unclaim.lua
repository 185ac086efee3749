-- ARGV: prefix, claimant, call ids... Drops the claims that are still this claimant's.
for i = 3, #ARGV do
  if redis.call('HGET', prefix .. 'claims', ARGV[i]) == ARGV[2] then
    redis.call('HDEL', prefix .. 'claims', ARGV[i])
  end
end
return 1
