import { describe, expect, it } from 'vitest';
import { Elections, type LeadershipTransition, ManualClock, MemoryTtlStore } from '../../src/leadership/index.ts';

describe('Elections onTransition hook', () => {
  it('reports acquired, renewed, lost and released with key, term and code', async () => {
    const clock = new ManualClock(0);
    const store = new MemoryTtlStore({ clock });
    const seen: LeadershipTransition[] = [];
    const elections = new Elections(store, { clock, onTransition: (t) => seen.push(t) });
    const a = await elections.acquire('k', 'a', 3_000);
    await clock.advance(3_000); // renewals at 1 000, 2 000, 3 000
    await store.compareAndSwap('k', 'a', 'intruder', 3_000);
    await clock.advance(1_000);
    expect(a?.signal.aborted).toBe(true);
    await clock.advance(3_000); // the intruder's record expires
    const b = await elections.acquire('k', 'b', 3_000);
    await b?.release();
    expect(seen.map((t) => t.kind)).toEqual([
      'acquired',
      'renewed',
      'renewed',
      'renewed',
      'lost',
      'acquired',
      'released',
    ]);
    expect(seen[0]).toMatchObject({ key: 'k', value: 'a', term: 1, durationMs: 0 });
    expect(seen[4]).toMatchObject({ value: 'a', term: 1, code: 'leadership_lost' });
    expect(seen[6]).toMatchObject({ value: 'b', term: 2, code: 'leadership_released' });
    await elections.close();
  });

  it('a throwing hook does not disturb elections', async () => {
    const clock = new ManualClock(0);
    const elections = new Elections(new MemoryTtlStore({ clock }), {
      clock,
      onTransition: () => {
        throw new Error('metrics down');
      },
    });
    const a = await elections.acquire('k', 'a', 3_000);
    await clock.advance(5_000);
    expect(a?.signal.aborted).toBe(false);
    expect(await a?.release()).toBe(true);
  });
});
