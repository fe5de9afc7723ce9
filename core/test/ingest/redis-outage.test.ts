/**
 * Ingest keeps placing and receiving uploads while Redis is down (issue 19
 * item 5): placement on the last known capacity, tus locks local to the
 * replica, `/health/ready` and the ops map say so — and everything is shared
 * again once Redis is back. Runs against a PRIVATE redis-server this test
 * starts and kills (never the shared one), a real storage element process
 * and the real PostgreSQL.
 */
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  freePort,
  spawnTracked,
  stopTracked,
  type TestSchema,
  waitFor,
} from '../../../test/support/index.ts';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import {
  ingestEnv,
  METRICS_AUTH,
  metadataFor,
  type SeProcess,
  startIngestInProcess,
  startSe,
  storageElementsJson,
  TusClient,
  testBytes,
} from './support/harness.ts';

const OPERATOR_TOKEN = 'redis-outage-operator-token-0123';
let schema: TestSchema;
let se: SeProcess;
let ingest: RunningIngest;
let tus: TusClient;
let redisPort: number;
let redisServer: ChildProcess | null = null;

/** Starts the private redis-server on `redisPort` and waits until it answers PING. */
async function startRedis(): Promise<void> {
  redisServer = spawnTracked('redis-server', [
    '--port',
    String(redisPort),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  const probe = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  probe.on('error', () => {});
  try {
    await waitFor(async () => (await probe.ping().catch(() => null)) === 'PONG', {
      timeoutMs: 15_000,
      message: 'private redis-server answers',
    });
  } finally {
    probe.disconnect();
  }
}

async function killRedis(): Promise<void> {
  if (!redisServer) return;
  const child = redisServer;
  redisServer = null;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

async function ready(withToken: boolean): Promise<{ code: number; body: Record<string, unknown> }> {
  const response = await fetch(`${ingest.url}/health/ready`, withToken ? METRICS_AUTH : {});
  return { code: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function upload(seed: number, matchId: string): Promise<string> {
  const bytes = testBytes(300_000, seed);
  const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: matchId }));
  const last = await tus.send(path, bytes, 0, 64 * 1024);
  expect(last.status).toBe(204);
  return last.headers.get('x-content-sha256') ?? '';
}

beforeAll(async () => {
  redisPort = await freePort();
  await startRedis();
  schema = await createTestSchema('ingest_redis_outage');
  se = await startSe({ STORAGE_ELEMENT_ID: 'se-r' });
  ingest = await startIngestInProcess(
    ingestEnv({
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      DATABASE_SCHEMA: schema.schema,
      STORAGE_ELEMENTS: storageElementsJson([{ se, id: 'se-r', location: 'dc1' }]),
      // One SE: one copy per file is all this fleet can hold; asked for, it is not degraded.
      REPLICATION_FACTOR: '1',
      OPS_TOKENS: OPERATOR_TOKEN,
    }),
  );
  await waitFor(async () => (await ingest.monitor.status()).writable_storage_elements === 1, { timeoutMs: 15_000 });
  tus = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'acme')).token);
});

afterAll(async () => {
  await ingest?.close();
  await se?.stop();
  await killRedis();
  await schema?.close();
  if (redisServer) await stopTracked(redisServer);
});

describe('ingest while Redis is down', () => {
  it('places and completes uploads on the last known capacity, says so, and recovers when Redis is back', {
    timeout: 240_000,
  }, async () => {
    const t0 = Date.now();
    const mark = (what: string) => process.stderr.write(`[redis-outage] ${what} at ${Date.now() - t0} ms\n`);
    expect(await upload(1, 'before')).toMatch(/^[0-9a-f]{64}$/);
    expect(await ready(false)).toEqual({ code: 200, body: { status: 'ok' } });

    mark('first upload done');
    await killRedis();
    const degraded = await waitFor(
      async () => {
        const r = await ready(true);
        return r.body.status === 'degraded' ? r : null;
      },
      { timeoutMs: 20_000, message: '/health/ready says degraded' },
    );
    expect(degraded.code).toBe(200);
    expect((degraded.body.checks as Record<string, { ok: boolean }>).redis?.ok).toBe(false);
    expect(await ready(false)).toEqual({ code: 200, body: { status: 'degraded' } });

    mark('degraded');
    // Two uploads, one after the other, placed and received without Redis.
    const sha = await upload(2, 'during-1');
    expect(sha).toMatch(/^[0-9a-f]{64}$/);
    expect(await upload(3, 'during-2')).toMatch(/^[0-9a-f]{64}$/);
    const { rows } = await schema.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM files WHERE match_id IN ('during-1', 'during-2') AND storage_id = 'se-r'",
    );
    expect(Number(rows[0]?.n)).toBe(2);
    const details = (await ready(true)).body.degraded as Record<string, unknown>;
    expect(details.capacity_cache).toMatchObject({ last_known_at: expect.any(String) });
    expect(details.tus_locks_local_since).toEqual(expect.any(String));

    mark('uploads during the outage done');
    // The ops map says so (and still answers).
    const map = await waitFor(
      async () => {
        const response = await fetch(`${ingest.url}/api/v1/capacity-map`, {
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
        });
        const body = (await response.json()) as { redis: { reachable: boolean; since: string | null } };
        return response.status === 200 && !body.redis.reachable ? body : null;
      },
      { timeoutMs: 20_000, message: 'the ops map says Redis is unreachable' },
    );
    expect(map.redis.since).toEqual(expect.any(String));

    // Redis back (empty): shared again.
    mark('ops map says so');
    await startRedis();
    await waitFor(async () => (await ready(false)).body.status === 'ok', {
      timeoutMs: 30_000,
      message: '/health/ready ok again',
    });
    mark('ready again');
    // The capacity cache is shared again once the monitor's leader has written it: readiness says so
    // with no upload in between (it re-reads the cache while degraded, not only placements do).
    await waitFor(
      async () => ((await ready(true)).body.degraded as { capacity_cache: unknown }).capacity_cache === null,
      { timeoutMs: 30_000, message: 'capacity cache shared again before any upload' },
    );
    mark('capacity cache shared again');
    expect(await upload(4, 'after')).toMatch(/^[0-9a-f]{64}$/);
    mark('upload after done');
    await waitFor(
      async () => {
        const body = (await (await fetch(`${ingest.url}/health/ready`, METRICS_AUTH)).json()) as {
          degraded: { capacity_cache: unknown; tus_locks_local_since: unknown };
        };
        return body.degraded.capacity_cache === null && body.degraded.tus_locks_local_since === null;
      },
      { timeoutMs: 30_000, message: 'capacity cache and tus locks shared again' },
    );
  });
});
