/**
 * Leadership: who among several replicas does a job that only one may do
 * (the capacity monitor's polling, the scheduler), from seeds
 * capacity-management-migration-plan.md, adr-006-scheduler-leader-election.md
 * and vvm-orchestration.md.
 *
 * - {@link TtlStore} — expiring records with insert-if-absent (returning a
 *   fencing term), compare-and-swap, compare-and-delete and get; drivers:
 *   {@link RedisTtlStore} (ioredis, Lua), {@link PostgresTtlStore} (pg),
 *   {@link MemoryTtlStore} (embedded, injectable clock).
 * - {@link Elections} — acquire / campaign / renew at lease/3 / release, with
 *   an AbortSignal aborted on loss and a strictly increasing term.
 * - {@link LeadershipRunner} — services that run only while leadership is
 *   held, stopped on loss, with a kill hook if they do not stop within lease/4.
 * - {@link Clock}, {@link systemClock}, {@link ManualClock} — time, injectable for tests.
 * - Timing defaults ({@link DEFAULT_LEASE_MS}) measured in bench/leadership.
 */
export { type Clock, ManualClock, sleepOnClock, systemClock } from './clock.ts';
export {
  DEFAULT_LEASE_MS,
  DEFAULT_RENEW_DEADLINE_RATIO,
  defaultRetryIntervalMs,
  KILL_THRESHOLD_RATIO,
  RENEW_INTERVAL_RATIO,
} from './defaults.ts';
export {
  type CampaignOptions,
  Elections,
  type ElectionsOptions,
  type Leadership,
  type LeadershipTransition,
} from './elections.ts';
export { LeadershipError, type LeadershipErrorCode } from './errors.ts';
export { type LeaderLoopOptions, startLeaderLoop } from './leader-loop.ts';
export { MemoryTtlStore, type MemoryTtlStoreOptions } from './memory-ttl-store.ts';
export { type PgQueryable, PostgresTtlStore, type PostgresTtlStoreOptions } from './postgres-ttl-store.ts';
export { type RedisScriptClient, RedisTtlStore, type RedisTtlStoreOptions } from './redis-ttl-store.ts';
export { LeadershipRunner, type LeadershipRunnerOptions, type LeadershipService } from './runner.ts';
export { assertKey, assertTtlMs, type TtlRecord, type TtlStore } from './ttl-store.ts';
