import {
  ConfigError,
  DEFAULT_RENEW_DEADLINE_RATIO,
  envBool,
  envInt,
  envSecondsAsMs,
  loadConfig,
} from '@polyvision/shared';
import { z } from 'zod';

/**
 * Settings of the {@link AdaptiveCapacityMonitor}. Env names and defaults
 * are those of seed capacity-management-migration-plan.md ("Configuration
 * Parameters"); seconds there are converted to milliseconds here, once.
 */
export interface CapacityMonitorSettings {
  /** `CAPACITY_MONITOR_ENABLED`. @defaultValue true */
  enabled: boolean;
  /** `CAPACITY_MONITOR_LEADER_TTL` (s). @defaultValue 30_000 */
  leaderTtlMs: number;
  /**
   * `CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL` (s): time between the leader's
   * renewals of its lock; below the renew deadline (2/3 of the TTL). @defaultValue 10_000
   */
  leaderRenewalIntervalMs: number;
  /** `CAPACITY_MONITOR_BASE_INTERVAL` (s). @defaultValue 30_000 */
  baseIntervalMs: number;
  /** `CAPACITY_MONITOR_MAX_INTERVAL` (s). @defaultValue 300_000 */
  maxIntervalMs: number;
  /** `CAPACITY_MONITOR_HTTP_TIMEOUT` (s). @defaultValue 15_000 */
  httpTimeoutMs: number;
  /** `CAPACITY_MONITOR_HTTP_RETRIES`: retries after the first try. @defaultValue 3 */
  httpRetries: number;
  /** `CAPACITY_MONITOR_RETRY_BASE_DELAY` (s): 2 s, 4 s, 8 s. @defaultValue 2_000 */
  retryBaseDelayMs: number;
  /** `CAPACITY_MONITOR_CACHE_TTL` (s): TTL of `capacity:{se_id}`. @defaultValue 600_000 */
  cacheTtlMs: number;
  /** `CAPACITY_MONITOR_HEALTH_TTL` (s): TTL of `health:{se_id}`. @defaultValue 600_000 */
  healthTtlMs: number;
  /** `CAPACITY_MONITOR_FAILURE_THRESHOLD`: consecutive failures before unhealthy. @defaultValue 3 */
  failureThreshold: number;
  /** `CAPACITY_MONITOR_RECOVERY_THRESHOLD`: consecutive successes before healthy again. @defaultValue 2 */
  recoveryThreshold: number;
  /** `CAPACITY_MONITOR_POLL_CONCURRENCY`: SEs polled at once (new). @defaultValue 16 */
  pollConcurrency: number;
  /** `CAPACITY_MONITOR_NEAR_FULL_PERCENT`: at or above this `percent_used`, a writable SE is polled at base/2 (new). @defaultValue 90 */
  nearFullPercent: number;
  /** `CAPACITY_MONITOR_LAZY_LOCK_MS`: the short lock that makes a burst of 507s one poll (new). @defaultValue 5_000 */
  lazyLockMs: number;
  /**
   * `CAPACITY_MONITOR_IDLE_MAX_FACTOR`: an idle writable SE is polled at most every base × this (new);
   * 1 keeps every writable SE confirmed every base interval. @defaultValue 4
   */
  idleMaxFactor: number;
}

/** The seed's defaults, in milliseconds, except the leader lease: 6 s renewed every 2 s (the seed: 30 s / 10 s), measured in bench/leadership (crash failover ≈ 6 s, graceful at once with release notices). */
export const CAPACITY_MONITOR_DEFAULTS: Readonly<CapacityMonitorSettings> = Object.freeze({
  enabled: true,
  leaderTtlMs: 6_000,
  leaderRenewalIntervalMs: 2_000,
  baseIntervalMs: 30_000,
  maxIntervalMs: 300_000,
  httpTimeoutMs: 15_000,
  httpRetries: 3,
  retryBaseDelayMs: 2_000,
  cacheTtlMs: 600_000,
  healthTtlMs: 600_000,
  failureThreshold: 3,
  recoveryThreshold: 2,
  pollConcurrency: 16,
  nearFullPercent: 90,
  lazyLockMs: 5_000,
  idleMaxFactor: 4,
});

const d = CAPACITY_MONITOR_DEFAULTS;

/** Environment schema (keys are the variable names). */
export const capacityMonitorEnvSchema = z.object({
  CAPACITY_MONITOR_ENABLED: envBool(d.enabled),
  CAPACITY_MONITOR_LEADER_TTL: envSecondsAsMs(d.leaderTtlMs / 1000, 1),
  CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: envSecondsAsMs(d.leaderRenewalIntervalMs / 1000, 0.1),
  CAPACITY_MONITOR_BASE_INTERVAL: envSecondsAsMs(d.baseIntervalMs / 1000, 0.01),
  CAPACITY_MONITOR_MAX_INTERVAL: envSecondsAsMs(d.maxIntervalMs / 1000, 0.01),
  CAPACITY_MONITOR_HTTP_TIMEOUT: envSecondsAsMs(d.httpTimeoutMs / 1000, 0.01),
  CAPACITY_MONITOR_HTTP_RETRIES: envInt(d.httpRetries, 0, 10),
  CAPACITY_MONITOR_RETRY_BASE_DELAY: envSecondsAsMs(d.retryBaseDelayMs / 1000, 0),
  CAPACITY_MONITOR_CACHE_TTL: envSecondsAsMs(d.cacheTtlMs / 1000, 1),
  CAPACITY_MONITOR_HEALTH_TTL: envSecondsAsMs(d.healthTtlMs / 1000, 1),
  CAPACITY_MONITOR_FAILURE_THRESHOLD: envInt(d.failureThreshold, 1, 1000),
  CAPACITY_MONITOR_RECOVERY_THRESHOLD: envInt(d.recoveryThreshold, 1, 1000),
  CAPACITY_MONITOR_POLL_CONCURRENCY: envInt(d.pollConcurrency, 1, 1000),
  CAPACITY_MONITOR_NEAR_FULL_PERCENT: envInt(d.nearFullPercent, 1, 100),
  CAPACITY_MONITOR_LAZY_LOCK_MS: envInt(d.lazyLockMs, 10, 600_000),
  CAPACITY_MONITOR_IDLE_MAX_FACTOR: envInt(d.idleMaxFactor, 1, 100),
});

/**
 * Reads the `CAPACITY_MONITOR_*` variables.
 *
 * @throws ConfigError naming the variable for a bad value, or when
 *   `CAPACITY_MONITOR_MAX_INTERVAL` < `CAPACITY_MONITOR_BASE_INTERVAL`, or the
 *   renewal interval is not below the TTL.
 */
export function loadCapacityMonitorSettings(
  env: Record<string, string | undefined> = process.env,
): CapacityMonitorSettings {
  const e = loadConfig(capacityMonitorEnvSchema, env);
  return compileCapacityMonitorSettings({
    enabled: e.CAPACITY_MONITOR_ENABLED,
    leaderTtlMs: e.CAPACITY_MONITOR_LEADER_TTL,
    leaderRenewalIntervalMs: e.CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL,
    baseIntervalMs: e.CAPACITY_MONITOR_BASE_INTERVAL,
    maxIntervalMs: e.CAPACITY_MONITOR_MAX_INTERVAL,
    httpTimeoutMs: e.CAPACITY_MONITOR_HTTP_TIMEOUT,
    httpRetries: e.CAPACITY_MONITOR_HTTP_RETRIES,
    retryBaseDelayMs: e.CAPACITY_MONITOR_RETRY_BASE_DELAY,
    cacheTtlMs: e.CAPACITY_MONITOR_CACHE_TTL,
    healthTtlMs: e.CAPACITY_MONITOR_HEALTH_TTL,
    failureThreshold: e.CAPACITY_MONITOR_FAILURE_THRESHOLD,
    recoveryThreshold: e.CAPACITY_MONITOR_RECOVERY_THRESHOLD,
    pollConcurrency: e.CAPACITY_MONITOR_POLL_CONCURRENCY,
    nearFullPercent: e.CAPACITY_MONITOR_NEAR_FULL_PERCENT,
    lazyLockMs: e.CAPACITY_MONITOR_LAZY_LOCK_MS,
    idleMaxFactor: e.CAPACITY_MONITOR_IDLE_MAX_FACTOR,
  });
}

/**
 * Fills defaults and checks the relations between settings.
 *
 * @throws ConfigError for max < base interval or a renewal interval not below the renew deadline (2/3 of the TTL).
 */
export function compileCapacityMonitorSettings(
  partial: Partial<CapacityMonitorSettings> = {},
): CapacityMonitorSettings {
  const s = { ...CAPACITY_MONITOR_DEFAULTS, ...partial };
  if (s.maxIntervalMs < s.baseIntervalMs) {
    throw new ConfigError(
      'CAPACITY_MONITOR_MAX_INTERVAL',
      `got ${s.maxIntervalMs / 1000} s, expected at least CAPACITY_MONITOR_BASE_INTERVAL (${s.baseIntervalMs / 1000} s)`,
    );
  }
  const renewDeadlineMs = Math.floor(s.leaderTtlMs * DEFAULT_RENEW_DEADLINE_RATIO);
  if (s.leaderRenewalIntervalMs >= renewDeadlineMs) {
    throw new ConfigError(
      'CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL',
      `got ${s.leaderRenewalIntervalMs / 1000} s, expected less than the renew deadline, 2/3 of CAPACITY_MONITOR_LEADER_TTL (${renewDeadlineMs / 1000} s)`,
    );
  }
  return Object.freeze(s);
}
