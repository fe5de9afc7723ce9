import { removeDataDir } from '../../../../storage-element/test/support/se-process.ts';
import {
  closeAll,
  createTestRedis,
  createTestSchema,
  type TestRedis,
  type TestSchema,
  waitFor,
} from '../../../../test/support/index.ts';
import type { RunningIngest } from '../../../src/ingest/index.ts';
import { ingestEnv, type SeProcess, startIngestInProcess, startSe, storageElementsJson } from './harness.ts';

/** One storage element of an {@link IngestWorld}. */
export interface WorldSe {
  /** `STORAGE_ELEMENT_ID` and the catalog's `storage_id`. */
  id: string;
  /** `STORAGE_DATACENTER_LOCATION` and the catalog's `location`. */
  location: string;
  /** More storage-element environment (`STORAGE_CAPACITY_LIMIT_BYTES`, `STORAGE_MODE`, …). */
  env?: Record<string, string>;
}

/** What {@link startIngestWorld} starts. */
export interface IngestWorldOptions {
  /**
   * Readable start of the PostgreSQL schema's name (`ingest_quota`) and of the
   * Redis key prefix (`ingest-quota-…:`, as `uniqueName` spells it).
   */
  name: string;
  /** The storage elements, started in parallel as child processes. */
  ses: WorldSe[];
  /**
   * Ingest environment on top of {@link ingestEnv}'s test defaults and the
   * world's `DATABASE_SCHEMA`, `REDIS_KEY_PREFIX` and `STORAGE_ELEMENTS`.
   */
  env?: Record<string, string>;
  /** How long to wait for the capacity monitor to see every SE writable. @defaultValue 15000 */
  readyTimeoutMs?: number;
}

/** A running ingest world; `close()` stops all of it. */
export interface IngestWorld {
  /** The catalog's schema (the ingest's `DATABASE_SCHEMA`). */
  schema: TestSchema;
  /** The Redis key prefix (the ingest's `REDIS_KEY_PREFIX`). */
  redis: TestRedis;
  /** The storage-element processes by id. */
  ses: Record<string, SeProcess>;
  /** The ingest replica, in this process. */
  ingest: RunningIngest;
  /** Stops the ingest, then the SEs (removing their data folders), then drops the Redis keys and the schema; safe to call twice. */
  close(): Promise<void>;
}

/**
 * Starts the world the ingest tests share: a PostgreSQL schema, a Redis key
 * prefix, real storage-element processes and an in-process ingest over them
 * (fast capacity polling, short leases: {@link ingestEnv}), and waits until
 * its capacity monitor (with its leader) reports every SE writable.
 *
 * @throws Error when a part does not start or the SEs do not all become
 *   writable within `readyTimeoutMs` (at least waitFor's floor); what did
 *   start is stopped first, so no process outlives the failure.
 */
export async function startIngestWorld(options: IngestWorldOptions): Promise<IngestWorld> {
  const { name, ses: specs, env = {}, readyTimeoutMs = 15_000 } = options;
  let schema: TestSchema | undefined;
  let redis: TestRedis | undefined;
  let ingest: RunningIngest | undefined;
  const ses: Record<string, SeProcess> = {};
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= closeAll(
      [
        async () => ingest?.close(),
        () => Promise.all(Object.values(ses).map((se) => se.stop())),
        () => Promise.all(Object.values(ses).map((se) => removeDataDir(se.dataDir))),
        async () => redis?.close(),
        async () => schema?.close(),
      ],
      'closing the ingest world',
    );
    return closed;
  };
  try {
    schema = await createTestSchema(name);
    redis = await createTestRedis(name);
    const started = await Promise.allSettled(
      specs.map(({ id, location, env: seEnv }) =>
        startSe({ STORAGE_ELEMENT_ID: id, STORAGE_DATACENTER_LOCATION: location, ...seEnv }),
      ),
    );
    started.forEach((result, i) => {
      if (result.status === 'fulfilled') ses[(specs[i] as WorldSe).id] = result.value;
    });
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const running = await startIngestInProcess(
      ingestEnv({
        DATABASE_SCHEMA: schema.schema,
        REDIS_KEY_PREFIX: redis.prefix,
        STORAGE_ELEMENTS: storageElementsJson(
          specs.map(({ id, location }) => ({ se: ses[id] as SeProcess, id, location })),
        ),
        ...env,
      }),
    );
    ingest = running;
    await waitFor(async () => (await running.monitor.status()).writable_storage_elements === specs.length, {
      timeoutMs: readyTimeoutMs,
      message: `the capacity monitor sees ${specs.length} writable SEs`,
    });
    return { schema, redis, ses, ingest: running, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
