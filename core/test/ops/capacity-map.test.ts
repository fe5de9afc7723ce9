import { describe, expect, it } from 'vitest';
import type { CachedCapacity } from '../../src/capacity/index.ts';
import {
  assembleCapacityMap,
  type CapacityMapInput,
  compileOpsSettings,
  expectedPollIntervalMs,
  loadOpsSettings,
  meanCoordinates,
  OpsSessions,
  tokenId,
} from '../../src/ops/index.ts';

const MiB = 2 ** 20;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');

function entry(id: string, over: Partial<CachedCapacity> = {}): CachedCapacity {
  return {
    storage_id: id,
    mode: 'rw',
    total: 100 * MiB,
    used: 40 * MiB,
    available: 50 * MiB,
    reserved: 10 * MiB,
    percent_used: 40,
    health: 'healthy',
    backend: 'local',
    location: 'dc-a',
    endpoint: `http://${id}`,
    last_update: new Date(NOW - 500).toISOString(),
    last_poll: new Date(NOW - 500).toISOString(),
    term: 3,
    reachable: true,
    full_marked_at: null,
    ...over,
  };
}

function input(over: Partial<CapacityMapInput> = {}): CapacityMapInput {
  return {
    nowMs: NOW,
    servedBy: 'ingest-1',
    monitorEnabled: true,
    pollBaseIntervalMs: 1_000,
    pollMaxIntervalMs: 60_000,
    warningPercent: 80,
    storageElements: [
      { storage_id: 'a1', endpoint: 'http://a1', token: 't', location: 'dc-a', coordinates: { lat: 50, lon: 8 } },
      { storage_id: 'a2', endpoint: 'http://a2', token: 't', location: 'dc-a', coordinates: { lat: 52, lon: 10 } },
      { storage_id: 'b1', endpoint: 'http://b1', token: 't', location: 'dc-b' },
    ],
    cache: new Map([
      ['a1', entry('a1')],
      ['a2', entry('a2', { available: 5 * MiB, used: 90 * MiB, reserved: 5 * MiB, percent_used: 90 })],
      ['b1', entry('b1', { location: 'dc-b', reachable: false, last_poll: new Date(NOW - 30_000).toISOString() })],
    ]),
    healthKeys: new Map([
      ['a1', 'healthy'],
      ['a2', 'healthy'],
      ['b1', 'unhealthy: timeout: connect ECONNREFUSED'],
    ]),
    count507: new Map([['a2', 3]]),
    leader: { instance_id: 'ingest-2', term: 3, since: new Date(NOW - 60_000).toISOString(), lease_remaining_ms: 1500 },
    instances: [
      { instance_id: 'ingest-1', role: 'follower', started_at: '', last_seen_at: '' },
      { instance_id: 'ingest-2', role: 'leader', started_at: '', last_seen_at: '' },
    ],
    events: [],
    jobs: { stages: [], latest: [], claim_problems: [] },
    ...over,
  };
}

describe('assembleCapacityMap', () => {
  it('sums writable capacity per datacenter and overall, leaving unhealthy SEs out, and flags the warning', () => {
    const map = assembleCapacityMap(input());
    expect(map.datacenters.map((d) => d.location)).toEqual(['dc-a', 'dc-b']);
    const a = map.datacenters[0]?.totals;
    expect(a?.writable_total_bytes).toBe(200 * MiB);
    expect(a?.writable_available_bytes).toBe(55 * MiB);
    expect(a?.writable_percent_used).toBe(72.5);
    expect(a?.warning).toBe(false);
    const b = map.datacenters[1]?.totals;
    expect(b?.unhealthy).toBe(1);
    expect(b?.writable_total_bytes).toBe(0);
    expect(b?.writable_percent_used).toBe(100);
    expect(b?.warning).toBe(true);
    expect(map.totals.storage_elements).toBe(3);
    expect(map.totals.writable_available_bytes).toBe(55 * MiB);
    expect(assembleCapacityMap(input({ warningPercent: 70 })).datacenters[0]?.totals.warning).toBe(true);
  });

  it('marks health from the monitor, staleness past twice the expected poll interval, and 507 counts', () => {
    const map = assembleCapacityMap(input());
    const [a1, a2, b1] = map.storage_elements;
    expect(a1).toMatchObject({ health: 'healthy', stale: false, last_poll_age_ms: 500, stale_after_ms: 8_000 });
    expect(a2).toMatchObject({ insufficient_storage_last_hour: 3, reserved_bytes: 5 * MiB, used_bytes: 90 * MiB });
    expect(b1).toMatchObject({ health: 'unhealthy', stale: true, reachable: false, coordinates: null });
    expect(b1?.health_detail).toContain('ECONNREFUSED');
  });

  it('shows configured SEs the cache does not know as unknown and stale', () => {
    const map = assembleCapacityMap(input({ cache: new Map(), healthKeys: new Map() }));
    expect(map.storage_elements.map((s) => [s.health, s.stale, s.mode])).toEqual([
      ['unknown', true, null],
      ['unknown', true, null],
      ['unknown', true, null],
    ]);
    expect(map.totals.writable_total_bytes).toBe(0);
  });

  it('lists replicas with the leader flagged and places datacenters at the mean of their coordinates', () => {
    const map = assembleCapacityMap(input());
    expect(map.instances.map((i) => [i.instance_id, i.leader])).toEqual([
      ['ingest-1', false],
      ['ingest-2', true],
    ]);
    expect(map.datacenters[0]?.coordinates).toEqual({ lat: 51, lon: 9 });
    expect(map.datacenters[1]?.coordinates).toBeNull();
    expect(meanCoordinates([{ x: 0, y: 0 }, null, { x: 4, y: 2 }])).toEqual({ x: 2, y: 1 });
  });

  it('expects read-only SEs to be polled at the max interval and idle writable ones at 4 × base', () => {
    expect(expectedPollIntervalMs('ro', 1_000, 60_000)).toBe(60_000);
    expect(expectedPollIntervalMs('rw', 1_000, 60_000)).toBe(4_000);
    expect(expectedPollIntervalMs('edit', 1_000, 2_000)).toBe(2_000);
  });
});

describe('OpsSessions', () => {
  const tokens = ['ops-token-0123456789abcdef', 'ops-token-second-0123456789'];

  it('accepts its own cookie across instances with the same tokens, and names the token', () => {
    const cookie = new OpsSessions(tokens, 60_000).issue(tokens[1] as string, NOW);
    expect(new OpsSessions([...tokens].reverse(), 60_000).verify(cookie, NOW + 1)).toBe(tokenId(tokens[1] as string));
  });

  it('refuses expired, tampered, foreign and malformed cookies', () => {
    const sessions = new OpsSessions(tokens, 60_000);
    const cookie = sessions.issue(tokens[0] as string, NOW);
    expect(sessions.verify(cookie, NOW + 60_001)).toBeNull();
    const [v, exp, id, mac] = cookie.split('.');
    expect(sessions.verify(`${v}.${Number(exp) + 1}.${id}.${mac}`, NOW)).toBeNull();
    expect(sessions.verify(`${cookie.slice(0, -2)}xx`, NOW)).toBeNull();
    expect(new OpsSessions(['ops-token-another-0123456789'], 60_000).verify(cookie, NOW)).toBeNull();
    for (const bad of [undefined, '', 'v1', 'v1.a.b.c', 'v2.1.2.3', 'x'.repeat(500)]) {
      expect(sessions.verify(bad, NOW)).toBeNull();
    }
  });
});

describe('loadOpsSettings', () => {
  it('is off without OPS_TOKENS and reads the variables with their units', () => {
    expect(loadOpsSettings({})).toBeNull();
    const s = loadOpsSettings({
      OPS_TOKENS: ' ops-token-0123456789abcdef , ops-token-second-0123456789 ',
      OPS_SESSION_TTL_SECONDS: '120',
      OPS_WARNING_PERCENT: '70',
    });
    expect(s).toMatchObject({
      tokens: ['ops-token-0123456789abcdef', 'ops-token-second-0123456789'],
      sessionTtlMs: 120_000,
      warningPercent: 70,
      refreshIntervalMs: 1_000,
    });
  });

  it('names the variable for a short token or a bad number', () => {
    expect(() => loadOpsSettings({ OPS_TOKENS: 'short' })).toThrow(/OPS_TOKENS: token #1 has 5 characters/);
    expect(() => loadOpsSettings({ OPS_TOKENS: 'ops-token-0123456789abcdef', OPS_WARNING_PERCENT: '101' })).toThrow(
      /OPS_WARNING_PERCENT/,
    );
    expect(() => compileOpsSettings({ tokens: [] })).toThrow(/OPS_TOKENS/);
  });
});
