/**
 * The Lua scripts behind {@link RedisTtlStore}. Redis runs each script
 * atomically (no other command interleaves), which is what makes
 * compare-and-swap and compare-and-delete safe (https://redis.io/docs/latest/develop/interact/programmability/eval-intro/).
 *
 * Every key a script touches is passed in KEYS (Redis Cluster needs this;
 * there, give the key a hash tag, e.g. `{capacity_monitor}:leader_lock`, so
 * that the record and its `:term` counter share a slot).
 */

/**
 * insertIfNotExists.
 * KEYS[1] record key; KEYS[2] term counter key (never expires).
 * ARGV[1] value; ARGV[2] TTL in milliseconds.
 * Returns the new term (integer >= 1) when the record was created, 0 when
 * the key was held. `SET NX PX` semantics; the counter is raised only on success.
 */
export const INSERT_IF_NOT_EXISTS = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
`;

/**
 * compareAndSwap.
 * KEYS[1] record key.
 * ARGV[1] expected value; ARGV[2] next value; ARGV[3] TTL in milliseconds.
 * Returns 1 when the record held ARGV[1] and now holds ARGV[2] with a fresh
 * TTL, 0 otherwise (absent, expired or held by another value).
 */
export const COMPARE_AND_SWAP = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
`;

/**
 * compareAndDelete.
 * KEYS[1] record key.
 * ARGV[1] expected value; ARGV[2] (optional) release channel.
 * Returns 1 when the record held ARGV[1] and was deleted, 0 otherwise.
 * On a delete, publishes ARGV[1] on ARGV[2] (the release notice followers
 * subscribe to). The term counter is left alone.
 */
export const COMPARE_AND_DELETE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] then redis.call('PUBLISH', ARGV[2], ARGV[1]) end
  return 1
end
return 0
`;

/**
 * get.
 * KEYS[1] record key; KEYS[2] term counter key.
 * No ARGV.
 * Returns nil when the record is absent, else {value, remaining TTL in
 * milliseconds (PTTL), term}; the three are read atomically.
 */
export const GET_RECORD = `
local value = redis.call('GET', KEYS[1])
if not value then
  return nil
end
return {value, redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0')}
`;
