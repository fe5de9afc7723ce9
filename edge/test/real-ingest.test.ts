/**
 * End to end against the real core ingest and a real storage element, both
 * as processes spoken to over HTTP only (the edge imports neither): the edge
 * records a synthetic match, stitches it, and uploads it through the ingest
 * (tus, PostgreSQL catalog, Redis locks) onto the storage element.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestRedis,
  createTestSchema,
  type ServiceProcess,
  serviceUrl,
  spawnService,
  type TestRedis,
  type TestSchema,
  waitFor,
} from '../../test/support/index.ts';
import { compileEdgeConfig, EdgeNode } from '../src/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const SE_TOKEN = 'se-token-edge-e2e';
const run = promisify(execFile);
/** The service mains print `{"event":"listening",…}`; slow starts on a loaded host are fine. */
const START = { nodeArgs: ['--no-warnings'], startTimeoutMs: 30_000 };

let clip: TestClip;
let work: string;
let schema: TestSchema;
let redis: TestRedis;
let se: ServiceProcess;
let ingest: ServiceProcess;
let token: string;

beforeAll(async () => {
  clip = await makeClip();
  work = await mkdtemp(join(tmpdir(), 'edge-e2e-'));
  schema = await createTestSchema('edge_e2e');
  redis = await createTestRedis('edge-e2e');
  se = await spawnService(
    join(ROOT, 'storage-element/src/main.ts'),
    {
      STORAGE_ELEMENT_ID: 'se-edge-e2e',
      STORAGE_DATACENTER_LOCATION: 'dc1',
      STORAGE_DATA_DIR: join(work, 'se'),
      STORAGE_PORT: '0',
      STORAGE_TOKENS: SE_TOKEN,
    },
    START,
  );
  const dbEnv = { DATABASE_URL: serviceUrl('DATABASE_URL'), DATABASE_SCHEMA: schema.schema };
  ingest = await spawnService(
    join(ROOT, 'core/src/ingest/main.ts'),
    {
      ...dbEnv,
      REDIS_URL: serviceUrl('REDIS_URL'),
      REDIS_KEY_PREFIX: redis.prefix,
      POLYVISION_TOPIC_PREFIX: 'edgee2e',
      INGEST_PORT: '0',
      STORAGE_ELEMENTS: JSON.stringify([
        { storage_id: 'se-edge-e2e', endpoint: se.url, token: SE_TOKEN, location: 'dc1' },
      ]),
      CAPACITY_MONITOR_LEADER_TTL: '2',
      CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '0.5',
      CAPACITY_MONITOR_BASE_INTERVAL: '0.3',
      CAPACITY_MONITOR_MAX_INTERVAL: '3',
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
      'org-1',
      '--edge',
      'edge-e2e',
      '--json',
    ],
    { env: { ...process.env, ...dbEnv } },
  );
  token = (JSON.parse(created.stdout) as { token: string }).token;
  await waitFor(async () => (await fetch(`${ingest.url}/health/ready`)).ok, {
    timeoutMs: 20_000,
    message: 'ingest ready',
  });
}, 120_000);

afterAll(async () => {
  await ingest?.stop();
  await se?.stop();
  await redis?.close();
  await schema?.close();
  await clip?.remove();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('edge → real ingest → storage element', () => {
  it('records, stitches and uploads a synthetic match; each file is confirmed and lands on the SE', async () => {
    const config = await compileEdgeConfig(
      {
        edge_id: 'edge-e2e',
        organization_id: 'org-1',
        ingest: { url: ingest.url, token, chunk_size_bytes: 64 * 1024 }, // default confirmation: X-Content-SHA256 from ingest
        cameras: clip.venue.cameras.map((c) => ({ id: c.id, source: { kind: 'synthetic', clip_dir: clip.dir } })),
        calibration: join(clip.dir, 'venue.json'),
        panorama: { encoder: 'libx264' },
        segment_duration_s: 1,
        spool: { dir: join(work, 'spool'), min_free_bytes: 0 },
        status: { port: 0 },
      },
      work,
    );
    // 5 s of recording: a loaded host's ffmpeg may start late, so the window holds at least one whole segment
    const node = await EdgeNode.start(config, { recordNow: { matchId: 'e2e-match', durationS: 5 } });
    try {
      await waitFor(() => node.spool.journal.all().length >= 1 && node.recordingMatchId === null, {
        timeoutMs: 30_000,
        message: 'recording done',
      }).catch(async (error) => {
        throw new Error(
          `${(error as Error).message}: ${JSON.stringify({ rows: node.spool.journal.all(), status: await node.status() })}`,
        );
      });
      await waitFor(() => node.spool.journal.all().every((r) => r.state === 'deleted'), {
        timeoutMs: 30_000,
        message: `all segments confirmed (alarms: ${JSON.stringify(node.alarms.list())})`,
      });
      const rows = node.spool.journal.all();
      const { rows: catalog } = await schema.pool.query<{ n: string }>('SELECT COUNT(*) AS n FROM uploads');
      expect(Number(catalog[0]?.n)).toBeGreaterThanOrEqual(rows.length);
      const capacity = (await (
        await fetch(`${se.url}/api/v1/capacity`, { headers: { authorization: `Bearer ${SE_TOKEN}` } })
      ).json()) as { used: number };
      expect(capacity.used).toBeGreaterThanOrEqual(rows.reduce((s, r) => s + r.sizeBytes, 0));
      expect(node.alarms.list()).toEqual([]);
    } finally {
      await node.close();
    }
  });

  it('raises ingest_unauthorized for a wrong token and keeps the segment', async () => {
    const config = await compileEdgeConfig(
      {
        edge_id: 'edge-e2e',
        organization_id: 'org-1',
        ingest: { url: ingest.url, token: 'not-a-token' },
        cameras: [{ id: 'camera-0', source: { kind: 'synthetic', clip_dir: clip.dir } }],
        panorama: { enabled: false },
        segment_duration_s: 1,
        spool: { dir: join(work, 'spool-bad'), min_free_bytes: 0 },
        status: { port: 0 },
      },
      work,
    );
    const node = await EdgeNode.start(config, { recordNow: { matchId: 'e2e-bad', durationS: 5 } });
    try {
      await waitFor(() => node.alarms.has('ingest_unauthorized'), { timeoutMs: 20_000 });
      expect(node.spool.journal.all().every((r) => r.state !== 'deleted')).toBe(true);
    } finally {
      await node.close();
    }
  });
});
