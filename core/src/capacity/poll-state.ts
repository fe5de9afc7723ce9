import { type CapacityReport, WRITABLE_STORAGE_MODES } from '@polyvision/shared';
import type { CachedCapacity } from './capacity-cache.ts';
import type { CapacityMonitorSettings } from './options.ts';

/**
 * The adaptive polling state of one storage element (seed
 * capacity-management-migration-plan.md, "Adaptive Polling"), as a pure
 * value: every transition returns a new state and the delay before the
 * next poll. No clock, no I/O; the monitor feeds it outcomes.
 *
 * Rules:
 * - The first interval is `baseIntervalMs`.
 * - A failure doubles the interval per consecutive failure (base × 2^n),
 *   capped at `maxIntervalMs`; after `failureThreshold` consecutive failures
 *   the SE is unhealthy.
 * - A success resets the failure count and the interval; an unhealthy SE is
 *   healthy again after `recoveryThreshold` consecutive successes.
 * - Beyond the seed: an SE that cannot take writes (`ro`, `ar`) is polled
 *   every `maxIntervalMs`; an SE whose report did not change (a `304` to
 *   `If-None-Match`, or the same numbers) for several polls in a row is idle
 *   and polled less (×2 per unchanged poll, at most `idleMaxFactor` ×
 *   base, default {@link IDLE_MAX_FACTOR}); an SE at or above `nearFullPercent` used is polled at base/2.
 *   Known activity (a reservation placed through this ingest, a 507) resets
 *   the idle count.
 */
export interface PollState {
  readonly intervalMs: number;
  readonly consecutiveFailures: number;
  readonly consecutiveSuccesses: number;
  readonly healthy: boolean;
  /** Polls in a row that found the report unchanged. */
  readonly unchangedPolls: number;
  /** `ETag` of the last report, for `If-None-Match`. */
  readonly etag: string | undefined;
  /** The last report received (kept across 304s). */
  readonly report: CapacityReport | undefined;
  /** Error type of the last failure, or undefined after a success. */
  readonly lastError: string | undefined;
}

/** Default of `CAPACITY_MONITOR_IDLE_MAX_FACTOR`: an idle writable SE is polled at most every base × this. */
export const IDLE_MAX_FACTOR = 4;

type IntervalSettings = Pick<
  CapacityMonitorSettings,
  'baseIntervalMs' | 'maxIntervalMs' | 'failureThreshold' | 'recoveryThreshold' | 'nearFullPercent'
> & { idleMaxFactor?: number };

/** The state of an SE never polled: healthy until proven otherwise, base interval. */
export function initialPollState(settings: IntervalSettings): PollState {
  return {
    intervalMs: settings.baseIntervalMs,
    consecutiveFailures: 0,
    consecutiveSuccesses: 0,
    healthy: true,
    unchangedPolls: 0,
    etag: undefined,
    report: undefined,
    lastError: undefined,
  };
}

/**
 * The state a new leader (or a follower's one-off lazy poll) starts an SE
 * from: what the cache says, so a leader change never makes an SE look
 * healthier than the evidence does.
 *
 * - Unhealthy when the cached entry says unreachable (`reachable: false`),
 *   or, with no entry, when `health:{se_id}` starts with `unhealthy` (a
 *   failed poll with no report to keep). It then needs `recoveryThreshold`
 *   successful polls before it is healthy again, as under the old leader.
 * - The failure count is the cached one (`consecutive_failures`), or
 *   `failureThreshold` for an unhealthy SE cached without it; a healthy SE
 *   with failures stays on course to be marked unhealthy after the rest.
 * - With nothing cached: {@link initialPollState}.
 *
 * @param cached - the `capacity:{se_id}` entry, if any.
 * @param health - the `health:{se_id}` value, if any.
 */
export function seededPollState(
  settings: IntervalSettings,
  cached: CachedCapacity | undefined,
  health: string | null | undefined,
): PollState {
  const initial = initialPollState(settings);
  const unhealthy = cached ? !cached.reachable : !!health?.startsWith('unhealthy');
  const cachedFailures = cached?.consecutive_failures;
  const consecutiveFailures = cachedFailures !== undefined ? cachedFailures : unhealthy ? settings.failureThreshold : 0;
  if (!unhealthy && consecutiveFailures === 0) return initial;
  return {
    ...initial,
    consecutiveFailures,
    healthy: !unhealthy && consecutiveFailures < settings.failureThreshold,
    lastError: unhealthy || consecutiveFailures > 0 ? 'cached_unhealthy' : undefined,
  };
}

/**
 * After a successful poll.
 *
 * @param report - the report now valid (for a 304, the previous one).
 * @param etag - the report's ETag, if the SE sent one.
 * @param changed - false for a 304 or identical numbers.
 */
export function pollSucceeded(
  state: PollState,
  settings: IntervalSettings,
  report: CapacityReport,
  etag: string | undefined,
  changed: boolean,
): PollState {
  const consecutiveSuccesses = state.consecutiveSuccesses + 1;
  const healthy = state.healthy || consecutiveSuccesses >= settings.recoveryThreshold;
  const unchangedPolls = changed ? 0 : state.unchangedPolls + 1;
  const next: PollState = {
    intervalMs: 0,
    consecutiveFailures: 0,
    consecutiveSuccesses,
    healthy,
    unchangedPolls,
    etag,
    report,
    lastError: undefined,
  };
  return { ...next, intervalMs: successIntervalMs(next, settings) };
}

/** After a failed poll (`errorType` is a short label for metrics: `timeout`, `http_5xx`, …). */
export function pollFailed(state: PollState, settings: IntervalSettings, errorType: string): PollState {
  const consecutiveFailures = state.consecutiveFailures + 1;
  return {
    ...state,
    consecutiveFailures,
    consecutiveSuccesses: 0,
    healthy: state.healthy && consecutiveFailures < settings.failureThreshold,
    unchangedPolls: 0,
    lastError: errorType,
    intervalMs: Math.min(settings.maxIntervalMs, settings.baseIntervalMs * 2 ** consecutiveFailures),
  };
}

/** Known activity on the SE (a reservation, a 507): not idle any more, back to the base interval or less. */
export function activityNoted(state: PollState, settings: IntervalSettings): PollState {
  if (state.consecutiveFailures > 0) return state;
  const next = { ...state, unchangedPolls: 0 };
  return { ...next, intervalMs: next.report ? successIntervalMs(next, settings) : settings.baseIntervalMs };
}

function successIntervalMs(state: PollState, settings: IntervalSettings): number {
  const { baseIntervalMs, maxIntervalMs } = settings;
  const report = state.report;
  if (report && !WRITABLE_STORAGE_MODES.includes(report.mode)) return maxIntervalMs;
  if (report && report.percent_used >= settings.nearFullPercent) return Math.max(1, Math.floor(baseIntervalMs / 2));
  if (state.unchangedPolls >= 2) {
    const factor = Math.min(settings.idleMaxFactor ?? IDLE_MAX_FACTOR, 2 ** (state.unchangedPolls - 1));
    return Math.min(maxIntervalMs, baseIntervalMs * factor);
  }
  return baseIntervalMs;
}
