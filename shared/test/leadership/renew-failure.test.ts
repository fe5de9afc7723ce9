import { describe, expect, it } from 'vitest';
import { Elections, type Leadership, ManualClock, MemoryTtlStore } from '../../src/leadership/index.ts';
import { EarlyFiringClock, FailingStore, type FailureMode } from './failing-store.ts';

/**
 * A leader whose renewals cannot succeed gives up at its renew deadline,
 * whatever the failure looks like, and retries at a spaced interval
 * meanwhile (never a tight loop). Memory store, manual clock.
 *
 * lease 12 000 ms: renewal due at 4 000, retries every lease/20 = 600 ms,
 * renew deadline 2/3 × lease = 8 000 ms after the acquisition was sent (at 0).
 */
describe('renewal failures end the leadership at the renew deadline', () => {
  const leaseMs = 12_000;
  const deadlineMs = 8_000;
  const retryMs = leaseMs / 20;
  // Attempts possible between the renewal at lease/3 and the deadline, one every lease/20 at most.
  const maxAttempts = 1 + Math.floor((deadlineMs - leaseMs / 3) / retryMs);

  async function failFromStart(mode: FailureMode, delayMs: number, clock: ManualClock, early = false) {
    const store = new FailingStore(new MemoryTtlStore({ clock }), clock, 100);
    const elections = new Elections(store, { clock: early ? new EarlyFiringClock(clock) : clock });
    const leadership = (await elections.acquire('k', 'a', leaseMs)) as Leadership;
    expect(leadership).not.toBeNull();
    store.fail(mode, delayMs);
    return { store, elections, leadership };
  }

  const cases: Array<{ mode: FailureMode; delayMs: number; minGapMs: number }> = [
    { mode: 'reject', delayMs: 0, minGapMs: retryMs },
    { mode: 'slow-reject', delayMs: 700, minGapMs: 700 + retryMs },
    { mode: 'hang', delayMs: 0, minGapMs: Number.POSITIVE_INFINITY },
    { mode: 'slow-reply', delayMs: 6_000, minGapMs: Number.POSITIVE_INFINITY },
  ];

  for (const { mode, delayMs, minGapMs } of cases) {
    it(`${mode}: aborted exactly at the deadline, spaced attempts, none after`, async () => {
      const clock = new ManualClock(0);
      const { store, elections, leadership } = await failFromStart(mode, delayMs, clock);
      await clock.advance(deadlineMs - 1);
      expect(leadership.signal.aborted).toBe(false);
      expect(leadership.holds()).toBe(true);
      await clock.advance(1);
      expect(leadership.signal.aborted).toBe(true);
      expect(leadership.holds()).toBe(false);
      expect(leadership.signal.reason).toMatchObject({ code: 'leadership_renew_timeout' });
      const attempts = [...store.attemptsAtMs];
      expect(attempts.length).toBeGreaterThanOrEqual(1);
      expect(attempts.length).toBeLessThanOrEqual(maxAttempts);
      expect(attempts[0]).toBe(leaseMs / 3);
      for (let i = 1; i < attempts.length; i++) {
        expect((attempts[i] ?? 0) - (attempts[i - 1] ?? 0)).toBeGreaterThanOrEqual(minGapMs);
      }
      expect(attempts.every((at) => at < deadlineMs)).toBe(true);
      await clock.advance(3 * leaseMs);
      expect(store.attemptsAtMs).toHaveLength(attempts.length);
      await elections.close();
    });
  }

  it('reject, with timers firing 1 ms early (as Node timers read on performance.now()): no spin at the deadline', async () => {
    const clock = new ManualClock(0);
    const { store, elections, leadership } = await failFromStart('reject', 0, clock, true);
    await clock.advance(deadlineMs + 1);
    expect(leadership.signal.reason).toMatchObject({ code: 'leadership_renew_timeout' });
    expect(store.attemptsAtMs.length).toBeLessThanOrEqual(maxAttempts + 1);
    expect(store.attemptsAtMs.every((at) => at < deadlineMs)).toBe(true);
    await elections.close();
  });

  it('a renewal that succeeds again before the deadline keeps the leadership and moves the deadline', async () => {
    const clock = new ManualClock(0);
    const inner = new MemoryTtlStore({ clock });
    const store = new FailingStore(inner, clock);
    const elections = new Elections(store, { clock });
    const leadership = (await elections.acquire('k', 'a', leaseMs)) as Leadership;
    store.fail('reject');
    await clock.advance(6_000); // attempts at 4 000, 4 600, … 5 800 all rejected
    const rejected = store.attemptsAtMs.length;
    expect(rejected).toBeGreaterThanOrEqual(3);
    store.heal();
    await clock.advance(deadlineMs); // the retry at 6 400 is confirmed: deadline 6 400 + 9 000
    expect(leadership.signal.aborted).toBe(false);
    expect(leadership.holds()).toBe(true);
    expect((await inner.get('k'))?.value).toBe('a');
    await elections.close();
  });
});
