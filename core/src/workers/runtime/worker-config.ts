import { envInt, loadConfig } from '@polyvision/shared';
import { z } from 'zod';

/** Environment of `pnpm polyvision worker` (documented in core/README.md). */
export const workerConfigSchema = z.object({
  KAFKA_BROKERS: z.string().optional(),
  /** Task claims live here; required for several workers to share them. */
  DATABASE_URL: z.string().url({ message: 'a postgres:// URL' }).optional(),
  DATABASE_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]{0,62}$/, { message: 'a lower-case SQL identifier' })
    .default('public'),
  /** The seeds' stage keys are written here when set. */
  REDIS_URL: z.string().url({ message: 'a redis:// URL' }).optional(),
  REDIS_KEY_PREFIX: z.string().default(''),
  POLYVISION_TOPIC_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, { message: 'letters, digits, ".", "_", "-"' })
    .default('polyvision'),
  WORKER_ID: z.string().min(1).max(200).optional(),
  WORKER_SESSION_TIMEOUT_MS: envInt(10_000, 1_000, 300_000),
  WORKER_CLAIM_LEASE_MS: envInt(30_000, 1_000, 3_600_000),
  /** Tasks per stage run at once. */
  WORKER_CONCURRENCY: envInt(1, 1, 64),
  WORKER_PROGRESS_INTERVAL_MS: envInt(1_000, 10, 600_000),
});

export type WorkerConfig = z.output<typeof workerConfigSchema>;

/** @throws ConfigError naming the variable. */
export function loadWorkerConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  return loadConfig(workerConfigSchema, env);
}
