import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  closeAll,
  createTestRedis,
  createTestSchema,
  type ServiceProcess,
  serviceUrl,
  spawnService,
  type TestRedis,
  type TestSchema,
} from '../../../test/support/index.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const run = promisify(execFile);
/** The service mains print `{"event":"listening",…}`; slow starts on a loaded host are fine. */
const START = { nodeArgs: ['--no-warnings'], startTimeoutMs: 30_000 };

/** What {@link startCoreWorld} starts. */
export interface CoreWorldOptions {
  /** Readable start of the PostgreSQL schema, the Redis key prefix and the SEs' data folder. */
  name: string;
  /** The storage elements (`STORAGE_ELEMENT_ID`, `STORAGE_DATACENTER_LOCATION`), started in parallel. */
  ses: Array<{ id: string; location: string }>;
  /** The SEs' `STORAGE_TOKENS` and the ingest's token for them. */
  seToken: string;
  /**
   * Ingest environment on top of the world's (database, Redis, port 0,
   * `STORAGE_ELEMENTS`) and a fast capacity monitor (leader TTL 2 s,
   * renewal 0.5 s, polling 0.3–3 s).
   */
  env?: Record<string, string>;
  /** The edge token made with the operator CLI (`ingest token create`). */
  edge: { organizationId: string; edgeId: string };
}

/** The core side of an edge end-to-end test: all processes, spoken to over HTTP only. */
export interface CoreWorld {
  schema: TestSchema;
  redis: TestRedis;
  /** The storage-element processes by id. */
  ses: Record<string, ServiceProcess>;
  /** The ingest process. */
  ingest: ServiceProcess;
  /** The edge's bearer token for the ingest. */
  token: string;
  /** Stops the ingest, then the SEs; drops the Redis keys and the schema; removes the SEs' data. Safe twice. */
  close(): Promise<void>;
}

/**
 * Starts a real core for the edge to upload to — PostgreSQL schema, Redis
 * prefix, storage-element processes, an ingest process over them — and makes
 * an edge token with the operator CLI. The edge imports none of it: only
 * URLs and the token come back. Waits for the processes' `listening` lines,
 * not for the capacity monitor: each test waits for the readiness it needs.
 *
 * @throws Error when a part does not start or the CLI fails; what did start
 *   is stopped first, so no process outlives the failure.
 */
export async function startCoreWorld(options: CoreWorldOptions): Promise<CoreWorld> {
  const { name, seToken, env = {}, edge } = options;
  let dataDir: string | undefined;
  let schema: TestSchema | undefined;
  let redis: TestRedis | undefined;
  let ingest: ServiceProcess | undefined;
  const ses: Record<string, ServiceProcess> = {};
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= closeAll(
      [
        async () => ingest?.stop(),
        () => Promise.all(Object.values(ses).map((se) => se.stop())),
        async () => redis?.close(),
        async () => schema?.close(),
        async () => dataDir && rm(dataDir, { recursive: true, force: true }),
      ],
      'closing the core world',
    );
    return closed;
  };
  try {
    const dir = await mkdtemp(join(tmpdir(), `${name}-`));
    dataDir = dir;
    schema = await createTestSchema(name);
    redis = await createTestRedis(name);
    const started = await Promise.allSettled(
      options.ses.map(({ id, location }) =>
        spawnService(
          join(ROOT, 'storage-element/src/main.ts'),
          {
            STORAGE_ELEMENT_ID: id,
            STORAGE_DATACENTER_LOCATION: location,
            STORAGE_DATA_DIR: join(dir, id),
            STORAGE_PORT: '0',
            STORAGE_TOKENS: seToken,
          },
          START,
        ),
      ),
    );
    started.forEach((result, i) => {
      if (result.status === 'fulfilled') ses[options.ses[i]?.id ?? ''] = result.value;
    });
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    const dbEnv = { DATABASE_URL: serviceUrl('DATABASE_URL'), DATABASE_SCHEMA: schema.schema };
    ingest = await spawnService(
      join(ROOT, 'core/src/ingest/main.ts'),
      {
        ...dbEnv,
        REDIS_URL: serviceUrl('REDIS_URL'),
        REDIS_KEY_PREFIX: redis.prefix,
        INGEST_PORT: '0',
        STORAGE_ELEMENTS: JSON.stringify(
          options.ses.map(({ id, location }) => ({
            storage_id: id,
            endpoint: ses[id]?.url,
            token: seToken,
            location,
          })),
        ),
        CAPACITY_MONITOR_LEADER_TTL: '2',
        CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '0.5',
        CAPACITY_MONITOR_BASE_INTERVAL: '0.3',
        CAPACITY_MONITOR_MAX_INTERVAL: '3',
        ...env,
      },
      START,
    );
    const created = await run(
      process.execPath,
      [
        '--no-warnings',
        join(ROOT, 'deploy/src/cli/main.ts'),
        'ingest',
        'token',
        'create',
        '--organization',
        edge.organizationId,
        '--edge',
        edge.edgeId,
        '--json',
      ],
      { env: { ...process.env, ...dbEnv } },
    );
    const { token } = JSON.parse(created.stdout) as { token: string };
    return { schema, redis, ses, ingest, token, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}
