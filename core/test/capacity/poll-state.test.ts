import type { CapacityReport } from '@polyvision/shared';
import { describe, expect, it } from 'vitest';
import {
  activityNoted,
  CAPACITY_MONITOR_DEFAULTS,
  IDLE_MAX_FACTOR,
  initialPollState,
  pollFailed,
  pollSucceeded,
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
