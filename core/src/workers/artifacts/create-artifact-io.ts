import { hostname } from 'node:os';
import { ConfigError, envInt, type Logger, loadConfig, silentLogger } from '@polyvision/shared';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { loadCapacityMonitorSettings, loadStorageElements } from '../../capacity/index.ts';
import type { Database } from '../../db/index.ts';
import { StorageElementClient } from '../../ingest/se-client.ts';
import { stageIoConfig } from '../detect/stage-io.ts';
import { type ArtifactIo, LocalArtifactIo } from './artifact-io.ts';
import { workerCapacityView } from './capacity-view.ts';
import { StorageElementArtifactIo } from './se-artifact-io.ts';

/** Environment of the storage-element artifact store (documented in core/README.md, "Workers"). */
export const seArtifactEnvSchema = z.object({
  REDIS_KEY_PREFIX: z.string().default(''),
  WORKER_ID: z.string().optional(),
  /** Reservations tried per output (ingest: `INGEST_PLACEMENT_MAX_ATTEMPTS`). */
  WORKER_PLACEMENT_MAX_ATTEMPTS: envInt(3, 1, 100),
  /** Bytes an SE must keep free beyond an output. */
  WORKER_HEADROOM_BYTES: envInt(0, 0),
  WORKER_PREFERRED_LOCATIONS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  /** Lifetime of an output's reservation without activity: a dead worker's open upload frees its file id after it. */
  WORKER_RESERVATION_TTL_MS: envInt(120_000, 1_000, 86_400_000),
  /** Timeout of the SE's small JSON calls; also the longest silence on a transfer. */
  WORKER_SE_TIMEOUT_MS: envInt(15_000, 100, 600_000),
  /** Tries of one download or upload (each resumes where the last broke). */
  WORKER_TRANSFER_ATTEMPTS: envInt(5, 1, 100),
});

/** What the worker process gives the artifact store. */
export interface ArtifactIoDependencies {
  env: Record<string, string | undefined>;
  /** The worker's database (`files` catalog); required with storage elements. */
  db?: Database | undefined;
  /** The worker's Redis (capacity cache); without it placement is blind. */
  redis?: Redis | null | undefined;
  logger?: Logger | undefined;
}

/** Whether `STORAGE_ELEMENTS` or `STORAGE_ELEMENTS_FILE` is set. */
export function storageElementsConfigured(env: Record<string, string | undefined>): boolean {
  return Boolean(env.STORAGE_ELEMENTS?.trim() || env.STORAGE_ELEMENTS_FILE?.trim());
}

/**
 * The stages' artifact store for this process: {@link StorageElementArtifactIo}
 * when `STORAGE_ELEMENTS`/`STORAGE_ELEMENTS_FILE` is set (reads and writes on
 * the SEs, catalog in `db`, placement over the Redis capacity cache), else
 * {@link LocalArtifactIo} over `WORKER_ARTIFACT_DIR` (embedded runs, tests).
 *
 * @throws ConfigError naming the variable: a bad SE list or `WORKER_*` value,
 *   or storage elements without a database.
 */
export function createArtifactIo(deps: ArtifactIoDependencies): ArtifactIo {
  const { env } = deps;
  if (!storageElementsConfigured(env)) {
    const local = stageIoConfig(env);
    return new LocalArtifactIo(local.artifactDir, local.storageId);
  }
  const storageElements = loadStorageElements(env);
  const config = loadConfig(seArtifactEnvSchema, env);
  if (!deps.db) {
    throw new ConfigError('STORAGE_ELEMENTS', 'set, but this process has no database for the file catalog');
  }
  const logger = deps.logger ?? silentLogger;
  return new StorageElementArtifactIo({
    storageElements,
    client: new StorageElementClient({
      timeoutMs: config.WORKER_SE_TIMEOUT_MS,
      streamIdleTimeoutMs: config.WORKER_SE_TIMEOUT_MS,
    }),
    capacity: workerCapacityView({
      redis: deps.redis,
      keyPrefix: config.REDIS_KEY_PREFIX,
      storageElements,
      settings: loadCapacityMonitorSettings(env),
      instanceId: `worker:${config.WORKER_ID ?? `${hostname()}:${process.pid}`}`,
      logger,
    }),
    db: deps.db,
    placement: {
      maxAttempts: config.WORKER_PLACEMENT_MAX_ATTEMPTS,
      headroomBytes: config.WORKER_HEADROOM_BYTES,
      preferredLocations: config.WORKER_PREFERRED_LOCATIONS,
      reservationTtlMs: config.WORKER_RESERVATION_TTL_MS,
      retryAfterMs: 30_000,
    },
    transferAttempts: config.WORKER_TRANSFER_ATTEMPTS,
    logger,
  });
}
