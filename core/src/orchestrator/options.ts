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
  /** A dispatched or running stage with no progress for this long is re-dispatched. @defaultValue 600_000 */
  stageDeadlineMs: number;
  /** Kafka session timeout of the orchestrator group. @defaultValue 10_000 (measured: bench/orchestrator) */
  sessionTimeoutMs: number;
  /** @defaultValue 1_000 */
  heartbeatIntervalMs: number;
  /** How often the outbox relay looks for rows without being kicked. @defaultValue 250 */
  relayPollIntervalMs: number;
  /** Rows the relay publishes per round. @defaultValue 500 */
  relayBatchSize: number;
  /** Backoff before a message whose handling failed (database down) is tried again. @defaultValue 500 */
  handlerRetryBackoffMs: number;
  /** How often `consumer_lag` is refreshed. @defaultValue 5_000 */
  lagPollIntervalMs: number;
}

const STAGE_DEFAULT_ATTEMPTS = 3;

/** The frozen defaults. */
export const ORCHESTRATOR_DEFAULTS: Readonly<Omit<OrchestratorTuning, 'instanceId'>> = Object.freeze({
  topicPrefix: 'polyvision',
  maxAttempts: Object.freeze({
    stitch: STAGE_DEFAULT_ATTEMPTS,
    detect: STAGE_DEFAULT_ATTEMPTS,
    track: STAGE_DEFAULT_ATTEMPTS,
    vcam: STAGE_DEFAULT_ATTEMPTS,
    analyze: STAGE_DEFAULT_ATTEMPTS,
    encode: STAGE_DEFAULT_ATTEMPTS,
  }),
  retry: Object.freeze({ initialMs: 1_000, coefficient: 2, maxMs: 100_000 }),
  stageDeadlineMs: 600_000,
  sessionTimeoutMs: 10_000,
  heartbeatIntervalMs: 1_000,
  relayPollIntervalMs: 250,
  relayBatchSize: 500,
  handlerRetryBackoffMs: 500,
  lagPollIntervalMs: 5_000,
});

const positive = z.number().int().positive();
const tuningSchema = z.object({
  topicPrefix: z.string().regex(/^[A-Za-z0-9._-]+$/),
  instanceId: z.string().min(1).max(200),
  maxAttempts: z.record(z.string(), z.number().int().min(1).max(100)),
  retry: z.object({ initialMs: positive, coefficient: z.number().min(1), maxMs: positive }),
  stageDeadlineMs: positive,
  sessionTimeoutMs: z.number().int().min(1_000),
  heartbeatIntervalMs: positive,
  relayPollIntervalMs: positive,
  relayBatchSize: positive,
  handlerRetryBackoffMs: positive,
  lagPollIntervalMs: positive,
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
  };
  tuningSchema.parse(tuning);
  return Object.freeze(tuning);
}
