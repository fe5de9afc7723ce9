import { describe, expect, it } from 'vitest';
import {
  Elections,
  ManualClock,
  MemoryTtlStore,
  PostgresTtlStore,
  type RedisScriptClient,
  RedisTtlStore,
} from '../../src/leadership/index.ts';
import { StallableStore } from './stallable-store.ts';

/**
 * The timing contract behind DEFAULT_LEASE_MS (shared/src/leadership/defaults.ts):
 * renewals every lease/3, give up 2/3 of a lease after the last confirmed
 * renewal was sent, hence a store stall is survived when it ends within
 * 2/3 − 1/3 = 1/3 of a lease at the worst phase (stall starting just before a renewal).
 */
describe('Elections stall tolerance (manual clock)', () => {
  const leaseMs = 12_000; // renew every 4 000 ms; renew deadline 8 000 ms; worst-case tolerance 4 000 ms

  async function stallAtWorstPhase(stallMs: number) {
    const clock = new ManualClock(0);
    const store = new StallableStore(new MemoryTtlStore({ clock }));
    const elections = new Elections(store, { clock });
    const leadership = await elections.acquire('k', 'a', leaseMs); // sent at 0
    await clock.advance(7_999); // renewal at 4 000 confirmed: deadline now 4 000 + 8 000 = 12 000
    store.stall(); // the renewal due at 8 000 will wait
    await clock.advance(stallMs);
    store.resume();
    await clock.advance(1);
    const lost = leadership?.signal.aborted ?? true;
    const reason = leadership?.signal.reason;
    await clock.advance(leaseMs); // a few more renewals
    const stillLeading = leadership?.signal.aborted === false;
    await elections.close();
    return { lost, reason, stillLeading };
  }

  it('survives a stall that ends within 1/3 of the lease after it began at the worst phase', async () => {
    const outcome = await stallAtWorstPhase(3_900);
    expect(outcome.lost).toBe(false);
    expect(outcome.stillLeading).toBe(true);
  });

  it('holds() turns false at the renew deadline even before the loss is signalled', async () => {
    const clock = new ManualClock(0);
    const store = new StallableStore(new MemoryTtlStore({ clock }));
    const elections = new Elections(store, { clock });
    const leadership = await elections.acquire('k', 'a', leaseMs);
    expect(leadership?.holds()).toBe(true);
    store.stall(); // the renewal at 4 000 never returns; deadline stays 8 000
    await clock.advance(7_999);
    expect(leadership?.holds()).toBe(true);
    await clock.advance(1);
    expect(leadership?.holds()).toBe(false);
    expect(leadership?.signal.reason).toMatchObject({ code: 'leadership_renew_timeout' });
    store.resume();
    await elections.close();
  });

  it('gives up (leadership_renew_timeout) when the stall lasts past the renew deadline', async () => {
    const outcome = await stallAtWorstPhase(4_100);
    expect(outcome.lost).toBe(true);
    expect(outcome.reason).toMatchObject({ code: 'leadership_renew_timeout', details: { key: 'k', term: 1 } });
  });
});

describe('option and argument validation', () => {
  const store = new MemoryTtlStore();

  it('refuses a renew deadline ratio outside (1/3, 1]', () => {
    for (const renewDeadlineRatio of [0.2, 1 / 3, 1.5, Number.NaN]) {
      expect(() => new Elections(store, { renewDeadlineRatio })).toThrow(
        expect.objectContaining({ code: 'elections_invalid_option' }),
      );
    }
    expect(() => new Elections(store, { renewDeadlineRatio: 1 })).not.toThrow();
  });

  it('refuses bad acquire and campaign arguments with ttl_store_invalid_argument', async () => {
    const elections = new Elections(store);
    await expect(elections.acquire('k', 'a', 0)).rejects.toMatchObject({ code: 'ttl_store_invalid_argument' });
    await expect(elections.acquire('', 'a', 1_000)).rejects.toMatchObject({ code: 'ttl_store_invalid_argument' });
    await expect(elections.campaign('k', 'a', 1_000, { retryIntervalMs: -5 })).rejects.toMatchObject({
      code: 'ttl_store_invalid_argument',
      message: expect.stringContaining('retryIntervalMs'),
    });
    expect(elections.held).toHaveLength(0);
    await elections.close();
  });

  it('refuses table and schema names that are not plain lower-case SQL identifiers', () => {
    const db = { query: async () => ({ rows: [], rowCount: 0 }) } as never;
    for (const table of ['Bad', 'x; DROP TABLE y', '', '1abc', 'a'.repeat(64)]) {
      expect(() => new PostgresTtlStore(db, { table })).toThrow(
        expect.objectContaining({ code: 'ttl_store_invalid_argument' }),
      );
    }
    expect(() => new PostgresTtlStore(db, { schema: 'has space' })).toThrow(
      expect.objectContaining({ code: 'ttl_store_invalid_argument' }),
    );
    expect(() => new PostgresTtlStore(db, { table: 'ok_table', schema: 'ok_schema' })).not.toThrow();
  });

  it('refuses an empty term suffix for the Redis driver', () => {
    const client = {} as RedisScriptClient;
    expect(() => new RedisTtlStore(client, { termSuffix: '' })).toThrow(
      expect.objectContaining({ code: 'ttl_store_invalid_argument' }),
    );
  });
});
