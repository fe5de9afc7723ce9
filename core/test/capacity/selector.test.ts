import { describe, expect, it } from 'vitest';
import { type SelectableStorage, selectStorage } from '../../src/capacity/index.ts';

function se(id: string, over: Partial<SelectableStorage> = {}): SelectableStorage {
  return { storage_id: id, mode: 'rw', available: 1000, health: 'healthy', reachable: true, location: 'dc1', ...over };
}

/** A deterministic uniform sequence. */
function lcg(seed = 42): () => number {
  let x = seed;
  return () => {
    x = (x * 1664525 + 1013904223) % 2 ** 32;
    return x / 2 ** 32;
  };
}

describe('selectStorage', () => {
  it('keeps only writable, healthy, reachable, fitting, non-excluded SEs and says why', () => {
    const result = selectStorage(
      [
        se('ok'),
        se('ro', { mode: 'ro' }),
        se('ar', { mode: 'ar' }),
        se('sick', { health: 'unhealthy' }),
        se('gone', { reachable: false }),
        se('small', { available: 100 }),
        se('ex'),
      ],
      { sizeBytes: 500, excluded: new Set(['ex']) },
    );
    expect(result.chosen?.storage_id).toBe('ok');
    expect(result.eligible.map((e) => e.storage_id)).toEqual(['ok']);
    expect(result.rejected).toEqual({
      ro: 'not_writable',
      ar: 'not_writable',
      sick: 'unhealthy',
      gone: 'unreachable',
      small: 'too_small',
      ex: 'excluded',
    });
  });

  it('keeps the headroom free', () => {
    const none = selectStorage([se('a', { available: 1000 })], { sizeBytes: 900, headroomBytes: 200 });
    expect(none.chosen).toBeUndefined();
    expect(none.rejected.a).toBe('too_small');
    const fits = selectStorage([se('a', { available: 1000 })], { sizeBytes: 800, headroomBytes: 200 });
    expect(fits.chosen?.storage_id).toBe('a');
  });

  it('prefers the first affinity datacenter that has room, else falls back', () => {
    const list = [
      se('a', { location: 'dc1' }),
      se('b', { location: 'dc2' }),
      se('c', { location: 'dc3', available: 10 }),
    ];
    for (let i = 0; i < 20; i++) {
      expect(selectStorage(list, { sizeBytes: 100, preferredLocations: ['dc3', 'dc2'] }).chosen?.storage_id).toBe('b');
    }
    const other = selectStorage(list, { sizeBytes: 100, preferredLocations: ['dc9'] });
    expect(['a', 'b']).toContain(other.chosen?.storage_id);
  });

  it('spreads by free bytes instead of always taking the emptiest', () => {
    const list = [se('big', { available: 3000 }), se('small', { available: 1000 })];
    const random = lcg();
    const counts: Record<string, number> = { big: 0, small: 0 };
    for (let i = 0; i < 4000; i++) {
      const id = selectStorage(list, { sizeBytes: 0, random }).chosen?.storage_id as string;
      counts[id] = (counts[id] ?? 0) + 1;
    }
    // Weights 3000:1000 → about 75 % / 25 %.
    expect((counts.big ?? 0) / 4000).toBeGreaterThan(0.7);
    expect((counts.big ?? 0) / 4000).toBeLessThan(0.8);
    expect(counts.small).toBeGreaterThan(0);
  });

  it('gives nothing when no SE is eligible', () => {
    const result = selectStorage([se('a', { mode: 'ro' })], { sizeBytes: 1 });
    expect(result.chosen).toBeUndefined();
    expect(result.eligible).toEqual([]);
  });
});
