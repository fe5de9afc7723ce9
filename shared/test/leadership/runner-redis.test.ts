import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serviceUrl } from '../../../test/support/service-env.ts';
import { waitFor } from '../../../test/support/wait-for.ts';
import { Elections, LeadershipRunner, type LeadershipService, RedisTtlStore } from '../../src/leadership/index.ts';

/** The runner over real Redis and real time: the seed's Basic test, then a hand-over. */
describe('LeadershipRunner on Redis (REDIS_URL)', () => {
  const leaseMs = 600;
  let redis: Redis;
  let keyPrefix: string;
  const opened: Elections[] = [];

  const ticking =
    (counter: { ticks: number }): LeadershipService =>
    async (signal) => {
      while (!signal.aborted) {
        counter.ticks += 1;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };

  function runner(services: LeadershipService[], acquireTimeoutMs: number): LeadershipRunner {
    const elections = new Elections(new RedisTtlStore(redis, { keyPrefix }));
    opened.push(elections);
    return new LeadershipRunner({
      elections,
      key: 'runner',
      value: `vvm-${randomUUID()}`,
      leaseMs,
      acquireTimeoutMs,
      services,
      kill: () => {
        throw new Error('kill called unexpectedly');
      },
    });
  }

  beforeEach(async () => {
    redis = new Redis(serviceUrl('REDIS_URL'));
    keyPrefix = `test:leadership-runner:${randomUUID()}:`;
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((e) => e.close()));
    await redis.del(`${keyPrefix}runner`, `${keyPrefix}runner:term`);
    await redis.quit();
  });

  it('a second instance fails to start while the first leads, and starts after the first shuts down', async () => {
    const first = { ticks: 0 };
    const second = { ticks: 0 };
    const vvm1 = runner([ticking(first)], 1_000);
    await vvm1.launch();

    const vvm2 = runner([ticking(second)], 2 * leaseMs);
    await expect(vvm2.launch()).rejects.toMatchObject({ code: 'leadership_not_acquired' });
    expect(second.ticks).toBe(0);
    expect(first.ticks).toBeGreaterThan(5); // kept leading (and renewing) through two leases

    const vvm3 = runner([ticking(second)], 5_000);
    const launching = vvm3.launch();
    expect(await vvm1.shutdown()).toBeNull();
    const ticksAtStop = first.ticks;
    await launching;
    expect(vvm3.leadership?.term).toBeGreaterThan(vvm1.leadership?.term ?? Number.POSITIVE_INFINITY);
    await waitFor(() => second.ticks > 0, { message: 'the new leader runs its service' });
    expect(first.ticks).toBe(ticksAtStop);
    expect(await vvm3.shutdown()).toBeNull();
    expect(await redis.exists(`${keyPrefix}runner`)).toBe(0);
  });
});
