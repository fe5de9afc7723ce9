import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { serviceUrl } from '../../../test/support/service-env.ts';
import { DEFAULT_RENEW_DEADLINE_RATIO, Elections, RedisTtlStore, type TtlStore } from '../../src/leadership/index.ts';

/**
 * The failure the ingest author met: the leader's Redis connection is closed
 * (`redis.disconnect()`), so every renewal rejects at once. The leadership
 * must end at its renew deadline, with a handful of spaced retries, not spin.
 */
describe('a leader whose Redis connection is closed (REDIS_URL)', () => {
  const leaseMs = 1_500; // renewal at 500 ms, retries every 75 ms, deadline 1 125 ms
  const deadlineMs = leaseMs * DEFAULT_RENEW_DEADLINE_RATIO;
  const cleanups: Array<() => Promise<unknown>> = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('is aborted at the renew deadline (+ a small margin), after a bounded number of spaced retries', async () => {
    const keyPrefix = `test:leadership-disconnect:${randomUUID()}:`;
    const admin = new Redis(serviceUrl('REDIS_URL'));
    cleanups.push(() => admin.quit());
    cleanups.push(() => admin.del(`${keyPrefix}k`, `${keyPrefix}k:term`));
    const client = new Redis(serviceUrl('REDIS_URL'), { lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    await client.connect();
    cleanups.push(async () => client.disconnect());
    const inner = new RedisTtlStore(client, { keyPrefix });
    const attemptsAtMs: number[] = [];
    const store: TtlStore = {
      insertIfNotExists: (key, value, ttlMs) => inner.insertIfNotExists(key, value, ttlMs),
      compareAndSwap: (key, expected, next, ttlMs) => {
        attemptsAtMs.push(performance.now());
        return inner.compareAndSwap(key, expected, next, ttlMs);
      },
      compareAndDelete: (key, expected) => inner.compareAndDelete(key, expected),
      get: (key) => inner.get(key),
    };
    const elections = new Elections(store);
    cleanups.push(() => elections.close());

    const sentAtMs = performance.now();
    const leadership = await elections.acquire('k', 'a', leaseMs);
    if (!leadership) throw new Error('not acquired');
    client.disconnect(); // every command now rejects at once with "Connection is closed."
    const abortedAtMs = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('leadership not aborted within 4 s')), 4_000);
      leadership.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(performance.now());
      });
    });

    expect(leadership.signal.reason).toMatchObject({ code: 'leadership_renew_timeout' });
    expect(leadership.holds()).toBe(false);
    // The deadline counts from the acquisition's send time, a little after sentAtMs.
    expect(abortedAtMs - sentAtMs).toBeGreaterThanOrEqual(deadlineMs - 2);
    // How soon after the deadline it fires depends on the host's load: bench/leadership measures it.
    // Renewal at lease/3, then one retry per lease/20 at most: 1 + (1125 − 500) / 75 → 9.
    expect(attemptsAtMs.length).toBeGreaterThanOrEqual(2);
    expect(attemptsAtMs.length).toBeLessThanOrEqual(9);
    for (let i = 1; i < attemptsAtMs.length; i++) {
      expect((attemptsAtMs[i] ?? 0) - (attemptsAtMs[i - 1] ?? 0)).toBeGreaterThan(leaseMs / 20 - 2);
    }
    const attemptsAtAbort = attemptsAtMs.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(attemptsAtMs).toHaveLength(attemptsAtAbort);
  });
});
