import { Command, type Redis } from 'ioredis';
import RedisMock from 'ioredis-mock';

/**
 * The embedded stand-in for Redis in the one-process demo: ioredis-mock, an
 * in-memory implementation of the ioredis API (strings with PX/NX, hashes,
 * streams, sorted sets, pub/sub, Lua through fengari). Every client made by one
 * {@link createEmbeddedRedis} shares one keyspace, as clients of one server do,
 * so two ingest replicas really compete for `capacity_monitor:leader_lock`.
 *
 * Only for the embedded demo: production and tests use a real Redis (REDIS_URL).
 */
export function createEmbeddedRedis(name: string): { client(): Redis } {
  // ioredis-mock shares data between instances with the same host and port.
  patchReplyTransformers();
  const options = { host: `${name}.embedded`, port: 6379, lazyConnect: false };
  return {
    client() {
      const client = new RedisMock(options) as unknown as Redis;
      return client;
    },
  };
}

/**
 * ioredis 6's reply transformers of some commands (ZRANGE…, ZRANGEBYSCORE,
 * XREAD, HRANDFIELD) need the call context (RESP protocol) that ioredis-mock
 * does not pass, and throw. Without a context there is nothing to convert (the
 * mock answers RESP2 shapes), so the wrapped transformer hands the reply back
 * unchanged; calls from real clients, which always pass a context, are untouched.
 */
let transformersPatched = false;
function patchReplyTransformers(): void {
  if (transformersPatched) return;
  transformersPatched = true;
  const reply = (
    Command as unknown as { _transformer: { reply: Record<string, (r: unknown, c?: unknown) => unknown> } }
  )._transformer.reply;
  for (const [name, transform] of Object.entries(reply)) {
    if (name === 'hgetall') continue; // context-free, and the mock relies on it
    reply[name] = (result: unknown, context?: unknown) => (context === undefined ? result : transform(result, context));
  }
}
