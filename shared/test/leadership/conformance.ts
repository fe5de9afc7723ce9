import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type Clock,
  Elections,
  type Leadership,
  LeadershipError,
  ManualClock,
  type TtlStore,
} from '../../src/leadership/index.ts';
import { StallableStore } from './stallable-store.ts';

/** One driver under test, as the conformance suite needs it. */
export interface ConformanceDriver {
  /** Shown in the describe title. */
  name: string;
  /** The lease the suite uses, in ms (short for real drivers, any with a manual clock). */
  leaseMs: number;
  /** Makes a fresh, isolated store (random prefix / table) for one test. */
  create(): Promise<ConformanceStore>;
}

/** A store made for one test, with the time it lives in. */
export interface ConformanceStore {
  store: TtlStore;
  clock: Clock;
  /** Lets `ms` of time pass: a real sleep, or `ManualClock.advance`. */
  pass(ms: number): Promise<void>;
  /** A new store instance over the same backing data; absent when the driver persists nothing. */
  reopen?: () => Promise<TtlStore>;
  /** Removes everything the test wrote and closes what `create` opened. */
  teardown(): Promise<void>;
}

/**
 * Registers the TtlStore + Elections conformance suite for one driver
 * (issue 2, item 5; seed vvm-orchestration.md "ElectionsTestSuite").
 * Call it at the top level of a test file.
 */
export function describeTtlStoreConformance(driver: ConformanceDriver): void {
  describe(`TtlStore conformance: ${driver.name}`, () => {
    const leaseMs = driver.leaseMs;
    const retryIntervalMs = Math.max(10, Math.round(leaseMs / 10));
    let ctx: ConformanceStore;
    let key: string;
    const opened: Elections[] = [];

    /** An Elections over `store` (default: the test's store) closed after the test. */
    const elections = (store: TtlStore = ctx.store): Elections => {
      const e = new Elections(store, { clock: ctx.clock });
      opened.push(e);
      return e;
    };

    /** Lets time pass in steps until `condition()` holds; fails after `timeoutMs` of (clock) time. */
    const until = async (condition: () => boolean, timeoutMs: number, stepMs = retryIntervalMs): Promise<void> => {
      const start = ctx.clock.now();
      while (!condition()) {
        if (ctx.clock.now() - start > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
        await ctx.pass(stepMs);
      }
    };

    beforeEach(async () => {
      ctx = await driver.create();
      key = `leader-${randomUUID()}`;
    });

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((e) => e.close()));
      await ctx.teardown();
    });

    describe('store operations', () => {
      it('insertIfNotExists: the first insert wins with a term >= 1, the second gets null', async () => {
        const term = await ctx.store.insertIfNotExists(key, 'a', leaseMs);
        expect(term).toBeGreaterThanOrEqual(1);
        expect(await ctx.store.insertIfNotExists(key, 'b', leaseMs)).toBeNull();
        expect((await ctx.store.get(key))?.value).toBe('a');
      });

      it('get returns the value, the remaining TTL within (0, lease] and the term; null when absent', async () => {
        expect(await ctx.store.get(key)).toBeNull();
        const term = await ctx.store.insertIfNotExists(key, 'a', leaseMs);
        const record = await ctx.store.get(key);
        expect(record).not.toBeNull();
        expect(record?.value).toBe('a');
        expect(record?.term).toBe(term);
        expect(record?.ttlMs).toBeGreaterThan(0);
        expect(record?.ttlMs).toBeLessThanOrEqual(leaseMs);
      });

      it('records expire after their TTL and the key can be inserted again with a higher term', async () => {
        const first = await ctx.store.insertIfNotExists(key, 'a', leaseMs);
        await ctx.pass(leaseMs + 50);
        expect(await ctx.store.get(key)).toBeNull();
        expect(await ctx.store.compareAndSwap(key, 'a', 'a', leaseMs)).toBe(false);
        const second = await ctx.store.insertIfNotExists(key, 'b', leaseMs);
        expect(second).toBeGreaterThan(first ?? Number.POSITIVE_INFINITY);
      });

      it('compareAndSwap needs the expected value, resets the TTL and keeps the term', async () => {
        const term = await ctx.store.insertIfNotExists(key, 'a', leaseMs);
        expect(await ctx.store.compareAndSwap(key, 'x', 'b', leaseMs)).toBe(false);
        await ctx.pass(Math.round(leaseMs * 0.6));
        expect(await ctx.store.compareAndSwap(key, 'a', 'b', leaseMs)).toBe(true);
        await ctx.pass(Math.round(leaseMs * 0.6));
        const record = await ctx.store.get(key);
        expect(record?.value).toBe('b'); // alive past the first TTL: the swap reset it
        expect(record?.term).toBe(term);
      });

      it('compareAndDelete needs the expected value; the term survives the delete', async () => {
        const term = await ctx.store.insertIfNotExists(key, 'a', leaseMs);
        expect(await ctx.store.compareAndDelete(key, 'x')).toBe(false);
        expect(await ctx.store.get(key)).not.toBeNull();
        expect(await ctx.store.compareAndDelete(key, 'a')).toBe(true);
        expect(await ctx.store.get(key)).toBeNull();
        expect(await ctx.store.compareAndDelete(key, 'a')).toBe(false);
        expect(await ctx.store.insertIfNotExists(key, 'b', leaseMs)).toBeGreaterThan(term ?? Number.POSITIVE_INFINITY);
      });

      it('rejects bad input with code ttl_store_invalid_argument', async () => {
        for (const call of [
          () => ctx.store.insertIfNotExists('', 'a', leaseMs),
          () => ctx.store.insertIfNotExists(key, '', leaseMs),
          () => ctx.store.insertIfNotExists(key, 'a', 0),
          () => ctx.store.insertIfNotExists(key, 'a', 1.5),
          () => ctx.store.compareAndSwap(key, 'a', 'b', -1),
          () => ctx.store.compareAndDelete(key, ''),
          () => ctx.store.get(''),
        ]) {
          await expect(call()).rejects.toMatchObject({ code: 'ttl_store_invalid_argument' });
        }
        expect(await ctx.store.get(key)).toBeNull();
      });
    });

    describe('elections', () => {
      it('first contender wins and the second fails', async () => {
        const a = await elections().acquire(key, 'a', leaseMs);
        const b = await elections().acquire(key, 'b', leaseMs);
        expect(a?.term).toBeGreaterThanOrEqual(1);
        expect(a?.signal.aborted).toBe(false);
        expect(b).toBeNull();
        expect((await ctx.store.get(key))?.value).toBe('a');
      });

      it('renewal keeps leadership past several leases', async () => {
        const a = await elections().acquire(key, 'a', leaseMs);
        await ctx.pass(leaseMs * 4);
        expect(a?.signal.aborted).toBe(false);
        expect(await elections().acquire(key, 'b', leaseMs)).toBeNull();
        expect((await ctx.store.get(key))?.term).toBe(a?.term);
      });

      it('a stopped renewer (crashed leader) loses it after the lease and a campaigning follower takes it', async () => {
        // The crashed leader: inserted once, never renewed.
        const startMs = ctx.clock.now();
        const crashedTerm = await ctx.store.insertIfNotExists(key, 'crashed', leaseMs);
        let b: Leadership | undefined;
        void elections()
          .campaign(key, 'b', leaseMs, { retryIntervalMs })
          .then((l) => {
            b = l;
          });
        await ctx.pass(Math.round(leaseMs / 2));
        expect(b).toBeUndefined();
        await until(() => b !== undefined, leaseMs * 3);
        const tookMs = ctx.clock.now() - startMs;
        expect(tookMs).toBeGreaterThanOrEqual(leaseMs * 0.9);
        // Upper bounds hold in virtual time only; on a real clock they depend on the host's load (bench/leadership).
        if (ctx.clock instanceof ManualClock) expect(tookMs).toBeLessThanOrEqual(leaseMs + 3 * retryIntervalMs + 300);
        expect(b?.term).toBeGreaterThan(crashedTerm ?? Number.POSITIVE_INFINITY);
      });

      it('a leader cut off from the store gives up before its lease ends; another takes over after it', async () => {
        const cut = new StallableStore(ctx.store);
        const a = await elections(cut).acquire(key, 'a', leaseMs);
        expect(a).not.toBeNull();
        cut.stall();
        const stalledAtMs = ctx.clock.now();
        let lostAtMs = Number.NaN;
        a?.signal.addEventListener('abort', () => {
          lostAtMs = ctx.clock.now();
        });
        let b: Leadership | undefined;
        let bWonAtMs = Number.NaN;
        void elections()
          .campaign(key, 'b', leaseMs, { retryIntervalMs })
          .then((l) => {
            b = l;
            bWonAtMs = ctx.clock.now();
          });
        await until(() => b !== undefined, leaseMs * 3);
        expect(a?.signal.aborted).toBe(true);
        expect(a?.signal.reason).toBeInstanceOf(LeadershipError);
        expect(a?.signal.reason).toMatchObject({ code: 'leadership_renew_timeout' });
        // a gave up no later than 2/3 of a lease after its last confirmed renewal,
        // which was at most lease/3 before the stall.
        if (ctx.clock instanceof ManualClock)
          expect(lostAtMs - stalledAtMs).toBeLessThanOrEqual(leaseMs * (2 / 3) + 100);
        expect(lostAtMs).toBeLessThan(bWonAtMs);
        cut.resume();
      });

      it('release hands over at once', async () => {
        const a = await elections().acquire(key, 'a', leaseMs);
        expect(await a?.release()).toBe(true);
        expect(a?.signal.aborted).toBe(true);
        expect(a?.signal.reason).toMatchObject({ code: 'leadership_released' });
        const b = await elections().acquire(key, 'b', leaseMs);
        expect(b).not.toBeNull();
        expect(b?.term).toBeGreaterThan(a?.term ?? Number.POSITIVE_INFINITY);
        expect(await a?.release()).toBe(false); // idempotent, and does not touch b's record
        expect((await ctx.store.get(key))?.value).toBe('b');
      });

      it('a contender with the wrong value can neither renew nor release', async () => {
        const a = await elections().acquire(key, 'a', leaseMs);
        expect(await ctx.store.compareAndSwap(key, 'wrong', 'wrong', leaseMs)).toBe(false);
        expect(await ctx.store.compareAndDelete(key, 'wrong')).toBe(false);
        await ctx.pass(leaseMs);
        expect((await ctx.store.get(key))?.value).toBe('a');
        expect(a?.signal.aborted).toBe(false);
      });

      it('the leader loses leadership when the stored value is changed under it', async () => {
        const a = await elections().acquire(key, 'a', leaseMs);
        expect(await ctx.store.compareAndSwap(key, 'a', 'intruder', leaseMs)).toBe(true);
        await until(() => a?.signal.aborted === true, leaseMs);
        expect(a?.signal.reason).toMatchObject({ code: 'leadership_lost' });
        expect((await ctx.store.get(key))?.value).toBe('intruder');
      });

      it('terms strictly increase across acquisitions, expiries and new store instances', async () => {
        const terms: number[] = [];
        for (const value of ['a', 'b', 'c', 'a']) {
          const l = await elections().acquire(key, value, leaseMs);
          terms.push(l?.term ?? Number.NaN);
          await l?.release();
        }
        await ctx.store.insertIfNotExists(key, 'expiring', leaseMs).then((t) => terms.push(t ?? Number.NaN));
        await ctx.pass(leaseMs + 50);
        const afterExpiry = await elections().acquire(key, 'd', leaseMs);
        terms.push(afterExpiry?.term ?? Number.NaN);
        await afterExpiry?.release();
        if (ctx.reopen) {
          const reopened = await ctx.reopen();
          const l = await elections(reopened).acquire(key, 'e', leaseMs);
          terms.push(l?.term ?? Number.NaN);
          await l?.release();
        }
        for (let i = 1; i < terms.length; i += 1) expect(terms[i]).toBeGreaterThan(terms[i - 1] ?? Number.NaN);
        expect(terms.length).toBe(ctx.reopen ? 7 : 6);
      });

      it('20 concurrent contenders yield exactly one leader', async () => {
        const contenders = Array.from({ length: 20 }, () => elections());
        const results = await Promise.all(contenders.map((e, i) => e.acquire(key, `c${i}`, leaseMs)));
        const leaders = results.filter((l) => l !== null);
        expect(leaders).toHaveLength(1);
        expect((await ctx.store.get(key))?.value).toBe(leaders[0]?.value);
      });

      it('20 concurrent campaigns lead one at a time, each with a higher term', async () => {
        const controller = new AbortController();
        let current: string | null = null;
        let overlaps = 0;
        const terms: number[] = [];
        const campaigns = Array.from({ length: 20 }, (_, i) =>
          elections()
            .campaign(key, `c${i}`, leaseMs, { retryIntervalMs, signal: controller.signal })
            .then(async (l) => {
              if (current !== null) overlaps += 1;
              current = l.value;
              terms.push(l.term);
              await Promise.resolve();
              current = null;
              await l.release();
            }),
        );
        let done = false;
        void Promise.all(campaigns).then(() => {
          done = true;
        });
        await until(() => done, 20 * (retryIntervalMs * 3 + 200));
        expect(overlaps).toBe(0);
        expect(terms).toHaveLength(20);
        for (let i = 1; i < terms.length; i += 1) expect(terms[i]).toBeGreaterThan(terms[i - 1] ?? Number.NaN);
      });

      it('cleanup releases every leadership; close ends campaigns and refuses new acquisitions', async () => {
        const e = elections();
        const a = await e.acquire(key, 'a', leaseMs);
        const a2 = await e.acquire(`${key}-2`, 'a', leaseMs);
        expect(e.held).toHaveLength(2);
        await e.cleanup();
        expect(a?.signal.aborted && a2?.signal.aborted).toBe(true);
        expect(await ctx.store.get(key)).toBeNull();
        expect(await ctx.store.get(`${key}-2`)).toBeNull();

        const holder = await elections().acquire(key, 'holder', leaseMs);
        const pending = e.campaign(key, 'a', leaseMs, { retryIntervalMs });
        await e.close();
        await expect(pending).rejects.toMatchObject({ code: 'elections_closed' });
        await expect(e.acquire(key, 'a', leaseMs)).rejects.toMatchObject({ code: 'elections_closed' });
        expect(holder?.signal.aborted).toBe(false);
      });

      it('an aborted campaign rejects with campaign_aborted and leaves no record', async () => {
        const holder = await elections().acquire(key, 'holder', leaseMs);
        const controller = new AbortController();
        const pending = elections().campaign(key, 'b', leaseMs, { retryIntervalMs, signal: controller.signal });
        await ctx.pass(retryIntervalMs * 2);
        controller.abort();
        await expect(pending).rejects.toMatchObject({ code: 'campaign_aborted' });
        await holder?.release();
        await ctx.pass(retryIntervalMs * 2);
        expect(await ctx.store.get(key)).toBeNull();
      });
    });
  });
}
