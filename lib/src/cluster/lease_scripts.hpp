// The Lua scripts Redis runs for cluster rules: atomic, on Redis's own clock.
#pragma once

#include <string_view>

namespace floodgate::cluster::detail {

/** Grants passes from a rule's sliding window, after taking back what an expired lease left.

    KEYS[1] the rule's hash (`{namespace:rule}`): field = bucket number, value = passes granted;
    field `short` = until when (Redis ms) the fleet counts as short of passes.
    ARGV: limit, asked, returned, returned bucket, bucket width ms, buckets per window,
    speculative (1: the minimum lease of a quiet instance, see lease_ask::speculative), carried
    (passes the instance let through on its own in the last window while Redis did not answer:
    recorded in the current bucket whatever the limit, before the grant), others (sent by an
    instance back from its local fallback: what the rest of the fleet may have let through on
    their fallbacks in a window, which Redis has not seen either and will hear of only when each
    is back), away (ms since Redis last answered that instance). `others` is recorded in the
    current bucket when the window holds no grant made while the instance was away (the fleet
    was down with it: an instance cut off alone finds the others' grants, which Redis counts
    already), and once per outage: field `recovering` holds until when, a window from then.
    Returns {granted, bucket, ms left in the bucket, ms until the oldest used bucket leaves, ms the
    fleet stays short}.

    An ask granted less than it asked for marks the fleet short for a window and a bucket; a
    speculative ask is granted nothing while it is, so the passes go to the instances whose
    requests want them, and instances ask for no more than their demand while it is
    (lease_reply::short_ms). The bucket is slack: a refused instance asks again when the window's
    oldest bucket leaves, up to a window after the refusal, and the mark must still hold when
    that room comes back, or a quiet instance's speculative ask at the bucket's start takes it.

    The window is the current bucket and the buckets-1 before it, on Redis's clock (TIME; Redis 7
    replicates a script's effects, so TIME is allowed). Grants never make the window's sum exceed
    the limit, and a lease is spent only inside its bucket, so the passes admitted in any window
    of the bucket grid never exceed the limit. Returned passes leave the bucket they were granted
    in, so others may take them while that bucket is still in the window.

    A bucket ahead of the current one was granted on a clock ahead of this one (a failover to a
    replica whose clock is behind, a clock stepped back): its passes are counted in the current
    bucket and leave with it, rather than filling every window until this clock catches up; a
    `short` mark set on such a clock lasts at most a window and a bucket from now. */
inline constexpr std::string_view lease_script = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local asked = tonumber(ARGV[2])
local returned = tonumber(ARGV[3])
local width = tonumber(ARGV[5])
local n = tonumber(ARGV[6])
local cur = math.floor(now / width)
if returned > 0 and redis.call('HEXISTS', KEYS[1], ARGV[4]) == 1 then
  if redis.call('HINCRBY', KEYS[1], ARGV[4], -returned) <= 0 then
    redis.call('HDEL', KEYS[1], ARGV[4])
  end
end
local all = redis.call('HGETALL', KEYS[1])
local used = 0
local oldest = cur
local short_until = 0
local recovering_until = 0
local newest = -1
for i = 1, #all, 2 do
  local b = tonumber(all[i])
  local v = tonumber(all[i + 1])
  if all[i] == 'short' and v ~= nil then
    short_until = math.min(v, now + width * (n + 1))
  elseif all[i] == 'recovering' and v ~= nil then
    recovering_until = math.min(v, now + width * n)
  elseif b == nil or v == nil or b <= cur - n then
    redis.call('HDEL', KEYS[1], all[i])
  else
    if b > cur then
      redis.call('HDEL', KEYS[1], all[i])
      redis.call('HINCRBY', KEYS[1], cur, v)
      b = cur
    end
    used = used + v
    if v > 0 and b < oldest then oldest = b end
    if v > 0 and b > newest then newest = b end
  end
end
local carried = tonumber(ARGV[8]) or 0
if carried > 0 then
  redis.call('HINCRBY', KEYS[1], cur, carried)
  used = used + carried
end
local others = tonumber(ARGV[9]) or 0
local away = tonumber(ARGV[10]) or 0
-- A bucket of slack: the last grants before the outage may share the bucket after its start.
if others > 0 and recovering_until <= now and newest <= math.floor((now - away) / width) + 1 then
  redis.call('HINCRBY', KEYS[1], cur, others)
  used = used + others
  redis.call('HSET', KEYS[1], 'recovering', now + width * n)
end
local grant = math.min(asked, limit - used)
if grant < 0 then grant = 0 end
if ARGV[7] == '1' then
  if short_until > now then grant = 0 end
elseif grant < asked then
  short_until = now + width * (n + 1)
  redis.call('HSET', KEYS[1], 'short', short_until)
end
if grant > 0 then
  redis.call('HINCRBY', KEYS[1], cur, grant)
end
redis.call('PEXPIRE', KEYS[1], width * (n + 1))
local retry = 0
if used + grant >= limit then retry = (oldest + n) * width - now end
local short_left = 0
if short_until > now then short_left = short_until - now end
return {grant, cur, (cur + 1) * width - now, retry, short_left}
)lua";

/** Announces this instance and counts the live ones.

    KEYS[1] the namespace's sorted set of instances (score: last heartbeat, Redis ms).
    ARGV: instance id, ms after which an instance that stopped beating is gone. Returns the count. */
inline constexpr std::string_view heartbeat_script = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return redis.call('ZCARD', KEYS[1])
)lua";

}  // namespace floodgate::cluster::detail
