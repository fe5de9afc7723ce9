import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ArtifactRef, generateMatch, type Stage, type StageTask, silentLogger } from '@polyvision/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeProcess, startSe } from '../../../../storage-element/test/support/se-process.ts';
import {
  createTestRedis,
  createTestSchema,
  serviceUrl,
  type TestRedis,
  type TestSchema,
  uniqueName,
} from '../../../../test/support/index.ts';
import { createDatabase, type Database, migrate } from '../../../src/db/index.ts';
import type { StageHandler, StageResult } from '../../../src/workers/runtime/stage-handler.ts';
import { loadStageHandler, type StageHandlerContext } from '../../../src/workers/runtime/stage-registry.ts';
import { putFile, seBytesWritten, seEntry, sha256Hex } from './support.ts';

let schema: TestSchema;
let db: Database;
let redis: TestRedis;
let dir: string;
let se1: SeProcess;
let se2: SeProcess;
let panorama: ArtifactRef;
const handlers: StageHandler[] = [];

beforeAll(async () => {
  schema = await createTestSchema('stages_se');
  db = createDatabase({ databaseUrl: serviceUrl('DATABASE_URL'), schema: schema.schema });
  await migrate(db);
  redis = await createTestRedis('stages-se');
  dir = await mkdtemp(join(tmpdir(), 'pv-stages-se-'));
  se1 = await startSe({ STORAGE_ELEMENT_ID: 'se-1', STORAGE_DATACENTER_LOCATION: 'dc1' });
  se2 = await startSe({ STORAGE_ELEMENT_ID: 'se-2', STORAGE_DATACENTER_LOCATION: 'dc2' });
  // 2 s of the synthetic match, panorama only, small: the default detector finds its players.
  await generateMatch({
    outDir: join(dir, 'clip'),
    cameras: 1,
    durationS: 2,
    fps: 10,
    widthPx: 640,
    heightPx: 360,
    seed: 7,
    panoramaVideo: true,
  });
  const bytes = await readFile(join(dir, 'clip', 'panorama.mp4'));
  await putFile(se1, 'f-upload-1', bytes);
  panorama = {
    kind: 'panorama',
    storage_id: 'se-1',
    object_key: 'f-upload-1',
    size_bytes: bytes.length,
    sha256: sha256Hex(bytes),
  };
}, 120_000);

afterAll(async () => {
  await Promise.all(handlers.map((h) => h.close?.()));
  await Promise.all([se1?.stop(), se2?.stop()]);
  await db?.close();
  await schema?.close();
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

function task(jobId: string, stage: Stage, inputs: ArtifactRef[]): StageTask {
  return {
    type: 'stage.task',
    message_id: randomUUID(),
    job_id: jobId,
    organization_id: 'acme',
    match_id: 'm-se',
    created_at: new Date().toISOString(),
    stage,
    attempt: 1,
    model_version: 'default',
    inputs,
    params: stage === 'detect' ? { analysis_fps: 5 } : {},
  };
}

async function run(handler: StageHandler, t: StageTask): Promise<StageResult> {
  return handler.run({ task: t, signal: new AbortController().signal, reportProgress: () => {}, logger: silentLogger });
}

describe('real stages through the worker wiring, on storage elements', () => {
  it('loadStageHandler with STORAGE_ELEMENTS: detect → track read from and write to SEs; a re-run writes nothing new', async () => {
    const context: StageHandlerContext = {
      env: {
        STORAGE_ELEMENTS: JSON.stringify([seEntry(se1, 'dc1'), seEntry(se2, 'dc2')]),
        REDIS_KEY_PREFIX: redis.prefix,
        WORKER_WORK_DIR: join(dir, 'work'),
      },
      db,
      redis: redis.client,
    };
    const detect = await loadStageHandler('detect', context);
    handlers.push(detect);
    const track = await loadStageHandler('track', context);
    const jobId = uniqueName('job');
    const detected = await run(detect, task(jobId, 'detect', [panorama]));
    const detections = detected.outputs[0] as ArtifactRef;
    expect(detections.kind).toBe('detections');
    expect(['se-1', 'se-2']).toContain(detections.storage_id);
    const tracked = await run(track, task(jobId, 'track', [detections, panorama]));
    const tracks = tracked.outputs[0] as ArtifactRef;
    expect(tracks.kind).toBe('tracks');
    const onSe = tracks.storage_id === 'se-1' ? se1 : se2;
    const body = await (await onSe.fetch(`/api/v1/files/${tracks.object_key}`)).text();
    expect(sha256Hex(Buffer.from(body))).toBe(tracks.sha256);
    expect((JSON.parse(body) as { tracks: unknown[] }).tracks.length).toBeGreaterThan(0);

    // The same tasks again (a redelivery after a crash): the same refs, no byte written, one catalog row each.
    const writtenBefore = (await seBytesWritten(se1)) + (await seBytesWritten(se2));
    const again = await run(detect, task(jobId, 'detect', [panorama]));
    expect(again.outputs).toEqual(detected.outputs);
    const tracksAgain = await run(track, task(jobId, 'track', [detections, panorama]));
    expect(tracksAgain.outputs).toEqual(tracked.outputs);
    expect((await seBytesWritten(se1)) + (await seBytesWritten(se2))).toBe(writtenBefore);
    const { rows } = await schema.pool.query<{ stage: string; n: number }>(
      'SELECT stage, count(*)::int AS n FROM files WHERE job_id = $1 GROUP BY stage ORDER BY stage',
      [jobId],
    );
    expect(rows).toEqual([
      { stage: 'detect', n: 1 },
      { stage: 'track', n: 2 }, // tracks.json and ball-track.json
    ]);
  }, 180_000);
});
