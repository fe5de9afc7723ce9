import type { CapacityReport } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import {
  activityNoted,
  CAPACITY_MONITOR_DEFAULTS,
  type CachedCapacity,
  IDLE_MAX_FACTOR,
  initialPollState,
  pollFailed,
  pollSucceeded,
  seededPollState,
} from '../../src/capacity/index.ts';

const s = { ...CAPACITY_MONITOR_DEFAULTS };

function report(over: Partial<CapacityReport> = {}): CapacityReport {
  return {
    storage_id: 'se-1',
    mode: 'rw',
    total: 1000,
    used: 100,
    available: 900,
    reserved: 0,
    percent_used: 10,
    health: 'healthy',
    backend: 'local',
    location: 'dc1',
    endpoint: 'http://127.0.0.1:1',
    last_update: new Date(0).toISOString(),
    ...over,
  };
}

describe('adaptive polling state (seed: "Adaptive Polling")', () => {
  it('initial interval is base_interval', () => {
    const state = initialPollState(s);
    expect(state.intervalMs).toBe(30_000);
    expect(state.healthy).toBe(true);
    expect(state.consecutiveFailures).toBe(0);
  });

  it('failure count increments on poll failure and the interval doubles up to the max', () => {
    let state = initialPollState(s);
    const intervals: number[] = [];
    for (let i = 0; i < 6; i++) {
      state = pollFailed(state, s, 'timeout');
      intervals.push(state.intervalMs);
    }
    expect(state.consecutiveFailures).toBe(6);
    expect(intervals).toEqual([60_000, 120_000, 240_000, 300_000, 300_000, 300_000]);
    expect(state.lastError).toBe('timeout');
  });

  it('unhealthy after FAILURE_THRESHOLD failures, healthy again after RECOVERY_THRESHOLD successes', () => {
    let state = initialPollState(s);
    state = pollFailed(state, s, 'http_5xx');
    state = pollFailed(state, s, 'http_5xx');
    expect(state.healthy).toBe(true);
    state = pollFailed(state, s, 'http_5xx');
    expect(state.healthy).toBe(false);
    state = pollSucceeded(state, s, report(), '"e1"', true);
    expect(state.healthy).toBe(false);
    expect(state.consecutiveFailures).toBe(0);
    state = pollSucceeded(state, s, report(), '"e1"', false);
    expect(state.healthy).toBe(true);
  });

  it('success resets failure count and interval', () => {
    let state = pollFailed(pollFailed(initialPollState(s), s, 'timeout'), s, 'timeout');
    state = pollSucceeded(state, s, report(), undefined, true);
    expect(state.consecutiveFailures).toBe(0);
    expect(state.intervalMs).toBe(s.baseIntervalMs);
  });

  it('polls ro/ar SEs at the max interval, near-full SEs at half the base', () => {
    expect(pollSucceeded(initialPollState(s), s, report({ mode: 'ro' }), undefined, true).intervalMs).toBe(300_000);
    expect(pollSucceeded(initialPollState(s), s, report({ mode: 'ar' }), undefined, true).intervalMs).toBe(300_000);
    const full = report({ used: 950, available: 50, percent_used: 95 });
    expect(pollSucceeded(initialPollState(s), s, full, undefined, true).intervalMs).toBe(15_000);
  });

  it('an idle SE (unchanged polls) is polled less, at most IDLE_MAX_FACTOR × base; activity resets it', () => {
    let state = pollSucceeded(initialPollState(s), s, report(), '"a"', true);
    const intervals: number[] = [];
    for (let i = 0; i < 5; i++) {
      state = pollSucceeded(state, s, report(), '"a"', false);
      intervals.push(state.intervalMs);
    }
    expect(intervals).toEqual([30_000, 60_000, 120_000, 120_000, 120_000]);
    expect(Math.max(...intervals)).toBe(IDLE_MAX_FACTOR * s.baseIntervalMs);
    state = activityNoted(state, s);
    expect(state.intervalMs).toBe(30_000);
    expect(state.unchangedPolls).toBe(0);
  });

  it('CAPACITY_MONITOR_IDLE_MAX_FACTOR=1 keeps an idle writable SE at the base interval', () => {
    const strict = { ...s, idleMaxFactor: 1 };
    let state = pollSucceeded(initialPollState(strict), strict, report(), '"a"', true);
    for (let i = 0; i < 5; i++) state = pollSucceeded(state, strict, report(), '"a"', false);
    expect(state.unchangedPolls).toBe(5);
    expect(state.intervalMs).toBe(30_000);
  });

  it('keeps the ETag and the report across a 304', () => {
    const first = pollSucceeded(initialPollState(s), s, report(), '"x"', true);
    const second = pollSucceeded(first, s, first.report as CapacityReport, '"x"', false);
    expect(second.etag).toBe('"x"');
    expect(second.report?.available).toBe(900);
  });
});

describe('poll state seeded from the cache (a new leader, a follower lazy poll)', () => {
  const cached = (over: Partial<CachedCapacity> = {}): CachedCapacity => ({
    ...report(),
    last_poll: new Date(0).toISOString(),
    term: 3,
    reachable: true,
    full_marked_at: null,
    ...over,
  });

  it('nothing cached, or cached healthy without failures: the initial state', () => {
    expect(seededPollState(s, undefined, null)).toEqual(initialPollState(s));
    expect(seededPollState(s, cached({ consecutive_failures: 0 }), 'healthy')).toEqual(initialPollState(s));
  });

  it('cached unreachable: starts unhealthy with its failure count and needs recoveryThreshold successes', () => {
    let state = seededPollState(s, cached({ reachable: false, consecutive_failures: 5 }), 'unhealthy: timeout');
    expect(state).toMatchObject({ healthy: false, consecutiveFailures: 5, consecutiveSuccesses: 0 });
    state = pollFailed(state, s, 'connection_refused');
    expect(state).toMatchObject({ healthy: false, consecutiveFailures: 6 });
    for (let i = 1; i < s.recoveryThreshold; i++) {
      state = pollSucceeded(state, s, report(), undefined, true);
      expect(state.healthy).toBe(false);
    }
    state = pollSucceeded(state, s, report(), undefined, true);
    expect(state.healthy).toBe(true);
  });

  it('cached unreachable from an entry without a count: at least the failure threshold', () => {
    const state = seededPollState(s, cached({ reachable: false }), 'unhealthy: timeout');
    expect(state).toMatchObject({ healthy: false, consecutiveFailures: s.failureThreshold });
  });

  it('only the health key says unhealthy (no entry): unhealthy', () => {
    const state = seededPollState(s, undefined, 'unhealthy: connection_refused: ECONNREFUSED');
    expect(state).toMatchObject({ healthy: false, consecutiveFailures: s.failureThreshold });
    expect(seededPollState(s, undefined, 'healthy')).toEqual(initialPollState(s));
  });

  it('cached healthy with failures so far: marked unhealthy after the remaining ones, not a full new count', () => {
    let state = seededPollState(s, cached({ consecutive_failures: s.failureThreshold - 1 }), 'healthy');
    expect(state).toMatchObject({ healthy: true, consecutiveFailures: s.failureThreshold - 1 });
    state = pollFailed(state, s, 'timeout');
    expect(state.healthy).toBe(false);
  });
});
