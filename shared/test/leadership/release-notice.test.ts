import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { serviceUrl } from '../../../test/support/service-env.ts';
import { waitFor } from '../../../test/support/wait-for.ts';
import {
  Elections,
  type Leadership,
  MemoryTtlStore,
  RedisTtlStore,
  type TtlStore,
} from '../../src/leadership/index.ts';

/**
 * Release notices: a follower whose retry interval is far longer than the test
 * wins as soon as the leader releases, because the store tells it.
 */
const LEASE_MS = 30_000;
/** Longer than any wait below: without the notice the follower would not try again in time. */
const RETRY_MS = 120_000;

describe('release notices end a follower wait at once', () => {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function handOver(store: TtlStore, ready: () => Promise<boolean>): Promise<Leadership> {
    const leaderElections = new Elections(store);
    const followerElections = new Elections(store);
    cleanups.push(
      () => leaderElections.close(),
      () => followerElections.close(),
    );
    const leader = await leaderElections.acquire('capacity', `leader-${randomUUID()}`, LEASE_MS);
    expect(leader).not.toBeNull();
    let won: Leadership | undefined;
    void followerElections
      .campaign('capacity', `follower-${randomUUID()}`, LEASE_MS, { retryIntervalMs: RETRY_MS })
      .then((leadership) => {
        won = leadership;
      })
      .catch(() => undefined);
    await waitFor(ready, { message: 'follower listening for release notices' });
    expect(won).toBeUndefined();
    await leader!.release();
    return waitFor(() => won, { timeoutMs: 30_000, message: 'follower leads after the release' });
  }

  it('in memory', async () => {
    const store = new MemoryTtlStore();
    let watching = false;
    const watch = store.watchReleases.bind(store);
    store.watchReleases = (key, onRelease) => {
      watching = true;
      return watch(key, onRelease);
    };
    const won = await handOver(store, async () => watching);
    expect(won.term).toBe(2);
  });

  it('on Redis (subscriber option, PUBLISH from the compare-and-delete script)', async () => {
    const url = serviceUrl('REDIS_URL');
    const redis = new Redis(url);
    const subscriber = new Redis(url);
    cleanups.push(
      () => redis.quit(),
      () => subscriber.quit(),
    );
    const keyPrefix = `release-notice-${randomUUID()}:`;
    const store = new RedisTtlStore(redis, { keyPrefix, subscriber });
    const channel = `${keyPrefix}capacity:released`;
    const won = await handOver(store, async () => {
      const [, count] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
      return Number(count) === 1;
    });
    expect(won.term).toBeGreaterThanOrEqual(2);
    expect(await store.get('capacity')).toMatchObject({ value: won.value });
  });

  it('a store without a subscriber has no watchReleases (followers keep their retry interval)', () => {
    expect(new RedisTtlStore(new Redis({ lazyConnect: true })).watchReleases).toBeUndefined();
  });
});
