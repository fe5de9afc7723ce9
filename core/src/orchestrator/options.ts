import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Stage } from '@polyvision/shared';
import { z } from 'zod';

/** How the orchestrator behaves; every field has a default (see {@link ORCHESTRATOR_DEFAULTS}). */
export interface OrchestratorTuning {
  /** Topic and group prefix (tests use a random one). @defaultValue 'polyvision' */
  topicPrefix: string;
  /** This replica's name in logs and `partition_owners`. @defaultValue `${hostname}:${pid}:${uuid8}` */
  instanceId: string;
  /** Attempts per stage run before the job fails. @defaultValue 3 for every stage */
  maxAttempts: Record<Stage, number>;
  /** Stage retry backoff (Temporal defaults). @defaultValue { initialMs: 1000, coefficient: 2, maxMs: 100_000 } */
  retry: { initialMs: number; coefficient: number; maxMs: number };
  /**
   * Schedule-to-start per job priority (Temporal's term): how long a task may
   * wait in its topic before a worker claims it. Generous: a backlog is not a
   * failure; past it the reconciler re-dispatches (`schedule_to_start_timeout`,
   * retriable). @defaultValue 24 h for every priority
   */
  scheduleToStartMs: Record<JobPriority, number>;
  /**
   * Start-to-close per stage: the longest one attempt may run from the
   * worker's claim, however alive its heartbeats. Liveness itself is the
   * claim lease (`WORKER_CLAIM_LEASE_MS`, renewed every third of it): a claim
   * whose lease ran out is lost at once (`heartbeat_timeout`).
   * @defaultValue 6 h for every stage
   */
  startToCloseMs: Record<Stage, number>;
  /**
   * Error codes that mean "not the stage's fault, wait and try again": an input
   * is not reachable now (a storage element restarting), or the worker running
   * the attempt was lost (`heartbeat_timeout`: killed, paused, evicted — a soak
   * with random kills hit one long stage three times and failed its match).
   * Retried with {@link waitRetry} backoff until `retryWindowMs` after the run's
   * first dispatch, without using up `maxAttempts`; each retry is a new attempt.
   * @defaultValue ['input_unavailable', 'storage_unavailable', 'output_unavailable', 'heartbeat_timeout']
   */
  waitingErrorCodes: readonly string[];
  /** Backoff of waiting errors. @defaultValue { initialMs: 2000, coefficient: 2, maxMs: 60_000 } */
  waitRetry: { initialMs: number; coefficient: number; maxMs: number };
  /** How long after a run's first dispatch waiting errors are still retried. @defaultValue 1_800_000 (30 min) */
  retryWindowMs: number;
  /**
   * Kafka session timeout of the orchestrator group: how long a killed replica
   * keeps its partitions. Needs the broker's `group.min.session.timeout.ms` ≤
   * this (the project's broker template sets 1 s; Kafka's default is 6 s).
   * Heartbeats run in the background (`@platformatic/kafka`), so a busy
   * replica is not evicted. @defaultValue 3_000 (measured: bench/orchestrator/failover.ts)
   */
  sessionTimeoutMs: number;
  /** @defaultValue 500 */
  heartbeatIntervalMs: number;
  /** How often the outbox relay looks for rows without being kicked. @defaultValue 250 */
  relayPollIntervalMs: number;
  /** Rows the relay publishes per round. @defaultValue 500 */
  relayBatchSize: number;
  /** Backoff before a message whose handling failed (database down) is tried again. @defaultValue 500 */
  handlerRetryBackoffMs: number;
  /** Backoff cap of a command whose handling keeps failing (doubling from `handlerRetryBackoffMs`). @defaultValue 5_000 */
  handlerRetryMaxBackoffMs: number;
  /**
   * Tries of a command that fails with a non-retriable error (a bug, a
   * constraint violation) before it goes to the DLQ with that error.
   * Retriable errors (database down) are retried for as long as they last.
   * @defaultValue 5
   */
  poisonMaxAttempts: number;
  /** How often `consumer_lag` is refreshed. @defaultValue 5_000 */
  lagPollIntervalMs: number;
  /**
   * Most tasks of one fan-out stage (detect, stitch) of one match job dispatched or running at
   * once, lowest segments first (segment-plan.ts `dispatchableTasks`): keeps a backlog's detect
   * in segment order so the live playlist advances while the workers catch up. Set it to about
   * the number of workers of the stage; null: every received segment at once. 4: on the edge-recorded
   * 1-minute match (bench/README § segments, 2 workers) last upload → completed 1.84 W with 4,
   * 1.93 W with 2, 2.25 W with none, and the first segment in the playlist after 9 / 15 / 31 s;
   * more than 1–2 keeps a bigger cluster's workers busy on one match's backlog. @defaultValue 4
   */
  matchFanOutInFlight: number | null;
  /**
   * Segments of one match job that may fail for good (a non-retriable error, or their attempts
   * spent) before the match fails: up to this many are left out like missing ones and the match
   * completes without them (its error, `segments_failed`, says which); one more fails the match.
   * 0: any segment's failure fails the match. A match whose every segment failed fails.
   * @defaultValue 5 (50 s of a match of 10-s segments)
   */
  matchMaxFailedSegments: number;
}

/** Job priorities (shared `jobSubmitSchema`). */
export type JobPriority = 'normal' | 'high';

const STAGE_DEFAULT_ATTEMPTS = 3;
const HOUR_MS = 3_600_000;
const perStage = (value: number): Readonly<Record<Stage, number>> =>
  Object.freeze({ stitch: value, detect: value, track: value, vcam: value, analyze: value, encode: value });

/** The frozen defaults. */
export const ORCHESTRATOR_DEFAULTS: Readonly<Omit<OrchestratorTuning, 'instanceId'>> = Object.freeze({
  topicPrefix: 'polyvision',
  maxAttempts: perStage(STAGE_DEFAULT_ATTEMPTS),
  retry: Object.freeze({ initialMs: 1_000, coefficient: 2, maxMs: 100_000 }),
  scheduleToStartMs: Object.freeze({ normal: 24 * HOUR_MS, high: 24 * HOUR_MS }),
  startToCloseMs: perStage(6 * HOUR_MS),
  waitingErrorCodes: Object.freeze([
    'input_unavailable',
    'storage_unavailable',
    'output_unavailable',
    'heartbeat_timeout',
  ]),
  waitRetry: Object.freeze({ initialMs: 2_000, coefficient: 2, maxMs: 60_000 }),
  retryWindowMs: 30 * 60_000,
  sessionTimeoutMs: 3_000,
  heartbeatIntervalMs: 500,
  relayPollIntervalMs: 250,
  relayBatchSize: 500,
  handlerRetryBackoffMs: 500,
  handlerRetryMaxBackoffMs: 5_000,
  poisonMaxAttempts: 5,
  lagPollIntervalMs: 5_000,
  matchFanOutInFlight: 4,
  matchMaxFailedSegments: 5,
});

const positive = z.number().int().positive();
const tuningSchema = z.object({
  topicPrefix: z.string().regex(/^[A-Za-z0-9._-]+$/),
  instanceId: z.string().min(1).max(200),
  maxAttempts: z.record(z.string(), z.number().int().min(1).max(100)),
  retry: z.object({ initialMs: positive, coefficient: z.number().min(1), maxMs: positive }),
  scheduleToStartMs: z.object({ normal: positive, high: positive }),
  startToCloseMs: z.record(z.string(), positive),
  waitingErrorCodes: z.array(z.string().min(1)),
  waitRetry: z.object({ initialMs: positive, coefficient: z.number().min(1), maxMs: positive }),
  retryWindowMs: z.number().int().nonnegative(),
  sessionTimeoutMs: z.number().int().min(1_000),
  heartbeatIntervalMs: positive,
  relayPollIntervalMs: positive,
  relayBatchSize: positive,
  handlerRetryBackoffMs: positive,
  handlerRetryMaxBackoffMs: positive,
  poisonMaxAttempts: z.number().int().min(1).max(1_000),
  lagPollIntervalMs: positive,
  matchFanOutInFlight: positive.nullable(),
  matchMaxFailedSegments: z.number().int().min(0).max(100_000),
});

/**
 * Fills and validates orchestrator tuning.
 *
 * @throws ZodError (as a PolyvisionError-free programming error) for out-of-range values.
 */
export function compileOrchestratorTuning(partial: Partial<OrchestratorTuning> = {}): OrchestratorTuning {
  const tuning: OrchestratorTuning = {
    ...ORCHESTRATOR_DEFAULTS,
    instanceId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    ...partial,
    maxAttempts: { ...ORCHESTRATOR_DEFAULTS.maxAttempts, ...partial.maxAttempts },
    retry: { ...ORCHESTRATOR_DEFAULTS.retry, ...partial.retry },
    scheduleToStartMs: { ...ORCHESTRATOR_DEFAULTS.scheduleToStartMs, ...partial.scheduleToStartMs },
    startToCloseMs: { ...ORCHESTRATOR_DEFAULTS.startToCloseMs, ...partial.startToCloseMs },
    waitRetry: { ...ORCHESTRATOR_DEFAULTS.waitRetry, ...partial.waitRetry },
  };
  tuningSchema.parse(tuning);
  return Object.freeze(tuning);
}
