import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestRedis, type TestRedis } from '../../../test/support/index.ts';
import { JOB_PROCESSED_TTL_MS, RedisIdempotencyCache } from '../../src/orchestrator/idempotency/idempotency-cache.ts';

describe.skipIf(!process.env.REDIS_URL)('RedisIdempotencyCache (job:processed:{job_id})', () => {
  let redis: TestRedis | undefined;
  const extra: Redis[] = [];
  afterEach(async () => {
    await redis?.close();
    redis = undefined;
    for (const client of extra.splice(0)) client.disconnect();
  });

  it('sets the key for 7 days and reads it back', async () => {
    redis = await createTestRedis('idem');
    const cache = new RedisIdempotencyCache(redis.client, redis.prefix);
    expect(await cache.has('job:processed:j1')).toBe(false);
    expect(await cache.set('job:processed:j1', JOB_PROCESSED_TTL_MS)).toBe(true);
    expect(await cache.has('job:processed:j1')).toBe(true);
    const ttl = await redis.client.pttl(`${redis.prefix}job:processed:j1`);
    expect(ttl).toBeGreaterThan(JOB_PROCESSED_TTL_MS - 60_000);
  });

  it('answers null (unknown) and false instead of throwing when Redis is unreachable', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => {});
    extra.push(dead);
    const cache = new RedisIdempotencyCache(dead);
    expect(await cache.has('job:processed:j1')).toBeNull();
    expect(await cache.set('job:processed:j1', 1_000)).toBe(false);
  });
});
