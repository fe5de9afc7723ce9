import { PolyvisionError } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import type { StorageCandidate, StorageElementConfig } from '../../src/capacity/index.ts';
import { type CapacityView, InsufficientStorageError, placeFile, type Reserver } from '../../src/ingest/index.ts';

function candidate(id: string, available: number, location = 'dc1'): StorageCandidate {
  return {
    storage_id: id,
    mode: 'rw',
    total: 10_000,
    used: 10_000 - available,
    available,
    reserved: 0,
    percent_used: 0,
    health: 'healthy',
    backend: 'local',
    location,
    endpoint: `http://${id}`,
    last_update: '',
    last_poll: '',
    term: 1,
    reachable: true,
    full_marked_at: null,
  };
}

function setup(ids: string[], answers: Record<string, 'ok' | '507' | 'down'>) {
  const ses: StorageElementConfig[] = ids.map((id) => ({
    storage_id: id,
    endpoint: `http://${id}`,
    token: 't',
    location: 'dc1',
  }));
  const lazy: string[] = [];
  const noted: string[] = [];
  const tried: string[] = [];
  const capacity: CapacityView = {
    candidates: async () => ids.map((id) => candidate(id, 5_000)),
    triggerLazyUpdate: async (id) => {
      lazy.push(id);
    },
    noteReservation: async (id) => {
      noted.push(id);
    },
  };
  const reserver: Reserver = {
    reserve: async (se) => {
      tried.push(se.storage_id);
      const answer = answers[se.storage_id];
      if (answer === '507') throw new InsufficientStorageError(se.storage_id, '507', { available: 0, requested: 1 });
      if (answer === 'down') throw new PolyvisionError('http_unavailable', 'connection refused', { retriable: true });
      return { reservation_id: `r-${se.storage_id}` };
    },
  };
  return { deps: { capacity, reserver, storageElements: ses }, lazy, noted, tried };
}

const options = {
  maxAttempts: 3,
  headroomBytes: 0,
  preferredLocations: [],
  reservationTtlMs: 60_000,
  retryAfterMs: 30_000,
};

describe('placeFile (seed "Retry Logic with Lazy Update")', () => {
  it('excludes an SE that answers 507, triggers its lazy update and places on the next', async () => {
    const { deps, lazy, noted, tried } = setup(['a', 'b'], { a: '507', b: 'ok' });
    const placed = await placeFile(deps, 1_000, { ...options, random: () => 0 });
    expect(tried).toEqual(['a', 'b']);
    expect(placed.se.storage_id).toBe('b');
    expect(placed.reservationId).toBe('r-b');
    expect(placed.attempts.map((a) => a.outcome)).toEqual(['insufficient_storage', 'reserved']);
    expect(lazy).toEqual(['a']);
    expect(noted).toEqual(['b']);
  });

  it('excludes an unreachable SE without a lazy update', async () => {
    const { deps, lazy, tried } = setup(['a', 'b'], { a: 'down', b: 'ok' });
    const placed = await placeFile(deps, 1_000, { ...options, random: () => 0 });
    expect(tried).toEqual(['a', 'b']);
    expect(placed.attempts[0]?.outcome).toBe('unreachable');
    expect(lazy).toEqual([]);
  });

  it('stops after maxAttempts and throws 507 with retry_after_ms and the attempts', async () => {
    const { deps, tried } = setup(['a', 'b', 'c', 'd'], { a: '507', b: '507', c: '507', d: 'ok' });
    const error = await placeFile(deps, 1_000, { ...options, random: () => 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PolyvisionError);
    const e = error as PolyvisionError;
    expect(e.code).toBe('insufficient_storage');
    expect(e.httpStatus).toBe(507);
    expect(e.details.retry_after_ms).toBe(30_000);
    expect(e.details.attempts).toHaveLength(3);
    expect(tried).toEqual(['a', 'b', 'c']);
  });

  it('gives up at once, with the reasons, when no SE is eligible', async () => {
    const { deps, tried } = setup(['a'], { a: 'ok' });
    const error = (await placeFile(deps, 9_000, options).catch((e: unknown) => e)) as PolyvisionError;
    expect(error.code).toBe('insufficient_storage');
    expect(error.details.not_eligible).toEqual({ a: 'too_small' });
    expect(tried).toEqual([]);
  });
});
