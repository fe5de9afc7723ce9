/**
 * End to end against the real core ingest and a real storage element, both
 * as processes spoken to over HTTP only (the edge imports neither): the edge
 * records a synthetic match, stitches it, and uploads it through the ingest
 * (tus, PostgreSQL catalog, Redis locks) onto the storage element.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServiceProcess, type TestSchema, waitFor } from '../../test/support/index.ts';
import { compileEdgeConfig, EdgeNode } from '../src/index.ts';
import { makeClip, type TestClip } from './support/clip.ts';
import { type CoreWorld, startCoreWorld } from './support/core-world.ts';

const SE_TOKEN = 'se-token-edge-e2e';

let clip: TestClip;
let work: string;
let core: CoreWorld;
let schema: TestSchema;
let se: ServiceProcess;
let ingest: ServiceProcess;
let token: string;

beforeAll(async () => {
  clip = await makeClip();
  work = await mkdtemp(join(tmpdir(), 'edge-e2e-'));
  core = await startCoreWorld({
    name: 'edge_e2e',
    ses: [{ id: 'se-edge-e2e', location: 'dc1' }],
    seToken: SE_TOKEN,
    env: { POLYVISION_TOPIC_PREFIX: 'edgee2e' },
    edge: { organizationId: 'org-1', edgeId: 'edge-e2e' },
  });
  ({ schema, ingest, token } = core);
  se = core.ses['se-edge-e2e'] as ServiceProcess;
  await waitFor(async () => (await fetch(`${ingest.url}/health/ready`)).ok, {
    timeoutMs: 20_000,
    message: 'ingest ready',
  });
}, 120_000);

afterAll(async () => {
  await core?.close();
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
