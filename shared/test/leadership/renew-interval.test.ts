import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RENEW_DEADLINE_RATIO,
  Elections,
  KILL_THRESHOLD_RATIO,
  type Leadership,
  ManualClock,
  MemoryTtlStore,
  RENEW_INTERVAL_RATIO,
} from '../../src/leadership/index.ts';

describe('leadership timing', () => {
  it('leaves a margin: a stuck leader is killed before its lease can pass to another contender', () => {
    expect(DEFAULT_RENEW_DEADLINE_RATIO + KILL_THRESHOLD_RATIO).toBeLessThan(1);
    expect(DEFAULT_RENEW_DEADLINE_RATIO).toBeGreaterThan(RENEW_INTERVAL_RATIO);
  });

  it('renews at the interval the caller gives, and refuses one not below the renew deadline', async () => {
    const clock = new ManualClock();
    const store = new MemoryTtlStore({ clock });
    const elections = new Elections(store, { clock });
    const renewals: number[] = [];
    const leadership = (await elections.acquire('k', 'a', 30_000, { renewIntervalMs: 5_000 })) as Leadership;
    const original = store.compareAndSwap.bind(store);
    store.compareAndSwap = (...args: Parameters<typeof store.compareAndSwap>) => {
      renewals.push(clock.now());
      return original(...args);
    };
    await clock.advance(16_000);
    expect(renewals).toEqual([5_000, 10_000, 15_000]);
    await leadership.release();
    await expect(elections.acquire('k2', 'a', 30_000, { renewIntervalMs: 20_000 })).rejects.toMatchObject({
      code: 'elections_invalid_option',
    });
    await elections.close();
  });
});
