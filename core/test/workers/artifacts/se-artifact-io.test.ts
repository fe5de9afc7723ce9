import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ArtifactRef } from '@polyvision/shared';
import { PolyvisionError } from '@polyvision/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type SeProcess, startSe } from '../../../../storage-element/test/support/se-process.ts';
import {
  createTestRedis,
  createTestSchema,
  serviceUrl,
  type TestRedis,
  type TestSchema,
  uniqueName,
} from '../../../../test/support/index.ts';
import {
  CapacityCache,
  compileCapacityMonitorSettings,
  type StorageElementConfig,
} from '../../../src/capacity/index.ts';
import { createDatabase, type Database, migrate } from '../../../src/db/index.ts';
import { StorageElementClient } from '../../../src/ingest/se-client.ts';
import {
  createArtifactIo,
  downloadFile,
  LocalArtifactIo,
  type OutputProducer,
  outputFileId,
  StorageElementArtifactIo,
  uploadFile,
  workerCapacityView,
} from '../../../src/workers/artifacts/index.ts';
import { cuttingProxy, putFile, seBytesWritten, seEntry, sha256Hex, testBytes } from './support.ts';

const MiB = 2 ** 20;
let schema: TestSchema;
let db: Database;
let redis: TestRedis;
let work: string;
const ses: SeProcess[] = [];

beforeAll(async () => {
  schema = await createTestSchema('artifacts');
  db = createDatabase({ databaseUrl: serviceUrl('DATABASE_URL'), schema: schema.schema });
  await migrate(db);
  redis = await createTestRedis('artifacts');
  work = await mkdtemp(join(tmpdir(), 'pv-artifacts-'));
});
afterEach(async () => {
  await Promise.all(ses.splice(0).map((s) => s.stop()));
});
afterAll(async () => {
  await db.close();
  await schema.close();
  await redis.close();
  await rm(work, { recursive: true, force: true });
});

async function se(id: string, location: string, env: Record<string, string> = {}): Promise<SeProcess> {
  const p = await startSe({ STORAGE_ELEMENT_ID: id, STORAGE_DATACENTER_LOCATION: location, ...env });
  ses.push(p);
  return p;
}

function seIo(
  list: StorageElementConfig[],
  over: { preferredLocations?: string[]; capacity?: ReturnType<typeof workerCapacityView>; attempts?: number } = {},
): StorageElementArtifactIo {
  return new StorageElementArtifactIo({
    storageElements: list,
    client: new StorageElementClient({ timeoutMs: 5_000, streamIdleTimeoutMs: 5_000 }),
    capacity:
      over.capacity ??
      workerCapacityView({
        redis: null,
        keyPrefix: '',
        storageElements: list,
        settings: compileCapacityMonitorSettings(),
        instanceId: 'test',
      }),
    db,
    placement: {
      maxAttempts: 3,
      headroomBytes: 0,
      preferredLocations: over.preferredLocations ?? [],
      reservationTtlMs: 60_000,
      retryAfterMs: 1_000,
    },
    transferAttempts: over.attempts ?? 5,
  });
}

function ref(storageId: string, objectKey: string, bytes: Uint8Array): ArtifactRef {
  return {
    kind: 'panorama',
    storage_id: storageId,
    object_key: objectKey,
    size_bytes: bytes.length,
    sha256: sha256Hex(bytes),
  };
}

async function caught(promise: Promise<unknown>): Promise<PolyvisionError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PolyvisionError);
  return error as PolyvisionError;
}

const producer = (jobId: string): OutputProducer => ({
  job_id: jobId,
  stage: 'detect',
  organization_id: 'acme',
  match_id: 'm-1',
  model_version: 'v1',
});

describe('StorageElementArtifactIo.openInput (real SE processes)', () => {
  it('downloads an input into the work folder and checks its sha256', async () => {
    const a = await se('se-a', 'dc1');
    const bytes = testBytes(3 * MiB + 17, 3);
    await putFile(a, 'f-pano-1', bytes);
    const io = seIo([seEntry(a, 'dc1')]);
    const dir = await mkdtemp(join(work, 'task-'));
    const path = await io.openInput(ref('se-a', 'f-pano-1', bytes), dir);
    expect(path.startsWith(dir)).toBe(true);
    expect(sha256Hex(await readFile(path))).toBe(sha256Hex(bytes));
    // A ref whose sha256 does not match the SE's bytes fails for good and leaves no file behind.
    const wrong = { ...ref('se-a', 'f-pano-1', bytes), sha256: 'a'.repeat(64) };
    const dir2 = await mkdtemp(join(work, 'task-'));
    const error = await caught(io.openInput(wrong, dir2));
    expect(error.code).toBe('input_checksum_mismatch');
    expect(error.retriable).toBe(false);
    await expect(stat(join(dir2, 'inputs', 'se-a', 'f-pano-1.part'))).rejects.toThrow();
    await expect(stat(join(dir2, 'inputs', 'se-a', 'f-pano-1'))).rejects.toThrow();
  });

  it('resumes with Range after the connection is cut mid-body (one call, a cutting proxy)', async () => {
    const a = await se('se-a', 'dc1');
    const bytes = testBytes(6 * MiB, 11);
    await putFile(a, 'f-cut', bytes);
    const proxy = await cuttingProxy(a.url, 2 * MiB);
    try {
      const client = new StorageElementClient({ timeoutMs: 5_000 });
      const target = join(await mkdtemp(join(work, 'cut-')), 'pano.mp4');
      const result = await downloadFile(client, seEntry(a, 'dc1', proxy.url), 'f-cut', target, {
        sizeBytes: bytes.length,
        sha256: sha256Hex(bytes),
        retry: { baseDelayMs: 10 },
      });
      expect(result.requests).toBe(2);
      expect(proxy.cuts()).toBe(1);
      expect(sha256Hex(await readFile(target))).toBe(sha256Hex(bytes));
    } finally {
      await proxy.close();
    }
  });

  it('resumes a download aborted mid-body from the bytes already on disk', async () => {
    const a = await se('se-a', 'dc1');
    const bytes = testBytes(6 * MiB, 12);
    await putFile(a, 'f-abort', bytes);
    const client = new StorageElementClient({ timeoutMs: 5_000 });
    const target = join(await mkdtemp(join(work, 'abort-')), 'pano.mp4');
    const options = { sizeBytes: bytes.length, sha256: sha256Hex(bytes) };
    const controller = new AbortController();
    const error = await caught(
      downloadFile(client, seEntry(a, 'dc1'), 'f-abort', target, {
        ...options,
        signal: controller.signal,
        onBytes: (n) => {
          if (n >= MiB) controller.abort();
        },
      }),
    );
    expect(error.code).toBe('aborted');
    const partial = (await stat(`${target}.part`)).size;
    expect(partial).toBeGreaterThanOrEqual(MiB);
    expect(partial).toBeLessThan(bytes.length);
    const resumed = await downloadFile(client, seEntry(a, 'dc1'), 'f-abort', target, options);
    expect(resumed.resumedFromBytes).toBe(partial);
    expect(resumed.requests).toBe(1);
    expect(sha256Hex(await readFile(target))).toBe(sha256Hex(bytes));
  });

  it('unknown SE → input_unavailable (not retriable); missing file → input_missing; SE down → retriable', async () => {
    const a = await se('se-a', 'dc1');
    const io = seIo([seEntry(a, 'dc1')], { attempts: 2 });
    const dir = await mkdtemp(join(work, 'err-'));
    const bytes = testBytes(1000);
    const unknown = await caught(io.openInput(ref('se-elsewhere', 'f-x', bytes), dir));
    expect(unknown.code).toBe('input_unavailable');
    expect(unknown.retriable).toBe(false);
    expect(unknown.message).toContain('se-elsewhere');
    const missing = await caught(io.openInput(ref('se-a', 'f-never-written', bytes), dir));
    expect(missing.code).toBe('input_missing');
    expect(missing.retriable).toBe(false);
    await a.stop();
    const down = await caught(io.openInput(ref('se-a', 'f-x', bytes), dir));
    expect(down.code).toBe('input_unavailable');
    expect(down.retriable).toBe(true);
  });
});

describe('StorageElementArtifactIo.writeOutput (real SEs, PostgreSQL catalog, Redis capacity cache)', () => {
  it('a full SE answers 507: the output is placed on the next SE, the cache entry is marked and refreshed', async () => {
    const full = await se('se-full', 'dc1', { STORAGE_CAPACITY_LIMIT_BYTES: String(MiB) });
    const roomy = await se('se-roomy', 'dc2');
    const list = [seEntry(full, 'dc1'), seEntry(roomy, 'dc2')];
    const prefix = `${redis.prefix}${uniqueName('cap')}:`;
    const cache = new CapacityCache(redis.client, prefix);
    // A stale cache: both SEs look roomy, so placement (affinity dc1) tries se-full first.
    for (const entry of list) {
      const now = new Date().toISOString();
      await cache.write(
        {
          storage_id: entry.storage_id,
          mode: 'rw',
          total: 100 * MiB,
          used: 0,
          available: 100 * MiB,
          reserved: 0,
          percent_used: 0,
          health: 'healthy',
          backend: 'local',
          location: entry.location,
          endpoint: entry.endpoint,
          last_update: now,
          last_poll: now,
          term: 1,
          reachable: true,
          full_marked_at: null,
          consecutive_failures: 0,
        },
        'healthy',
        { cacheTtlMs: 60_000, healthTtlMs: 60_000 },
      );
    }
    const capacity = workerCapacityView({
      redis: redis.client,
      keyPrefix: prefix,
      storageElements: list,
      settings: compileCapacityMonitorSettings({
        httpTimeoutMs: 2_000,
        httpRetries: 0,
      }),
      instanceId: 'worker-test',
    });
    const io = seIo(list, { preferredLocations: ['dc1'], capacity });
    const local = join(work, 'big-output.bin');
    const bytes = testBytes(2 * MiB, 21);
    await writeFile(local, bytes);
    const job = uniqueName('job');
    const out = await io.writeOutput({
      kind: 'detections',
      objectKey: 'acme/m-1/detect/v1/detections.jsonl',
      localPath: local,
      task: producer(job),
    });
    expect(out.storage_id).toBe('se-roomy');
    expect(out.sha256).toBe(sha256Hex(bytes));
    const onSe = await roomy.fetch(`/api/v1/files/${out.object_key}`);
    expect(onSe.status).toBe(200);
    expect(sha256Hex(Buffer.from(await onSe.arrayBuffer()))).toBe(sha256Hex(bytes));
    // The 507 led to a lazy update: the cache now holds se-full's real (small) room.
    const entry = (await cache.readMany(['se-full'])).get('se-full');
    expect(entry?.available).toBeLessThan(2 * MiB);
    const rows = await schema.pool.query(`SELECT storage_id, location FROM files WHERE job_id = $1`, [job]);
    expect(rows.rows).toEqual([{ storage_id: 'se-roomy', location: 'dc2' }]);
  });

  it('two identical runs write one file and one catalog row; new bytes replace the row and delete the old file (edit mode)', async () => {
    const a = await se('se-edit', 'dc1', { STORAGE_MODE: 'edit' });
    const io = seIo([seEntry(a, 'dc1')]);
    const job = uniqueName('job');
    const key = 'acme/m-1/track/v1/tracks.json';
    const local = join(work, `tracks-${job}.json`);
    await writeFile(local, JSON.stringify({ tracks: [1, 2, 3] }));
    const first = await io.writeOutput({ kind: 'tracks', objectKey: key, localPath: local, task: producer(job) });
    const uploadsAfterFirst = await seBytesWritten(a);
    const second = await io.writeOutput({ kind: 'tracks', objectKey: key, localPath: local, task: producer(job) });
    expect(second).toEqual(first);
    expect(await seBytesWritten(a)).toBe(uploadsAfterFirst); // nothing written the second time
    const count = async () =>
      Number(
        (
          await schema.pool.query(`SELECT count(*)::int AS n FROM files WHERE job_id = $1 AND output_key = $2`, [
            job,
            key,
          ])
        ).rows[0].n,
      );
    expect(await count()).toBe(1);
    // Another job with the same key and bytes is another output (its own row).
    const other = await io.writeOutput({
      kind: 'tracks',
      objectKey: key,
      localPath: local,
      task: producer(`${job}-b`),
    });
    expect(other.object_key).not.toBe(first.object_key);
    // Different bytes under the same identity: the row is replaced, the old file deleted on the SE.
    await writeFile(local, JSON.stringify({ tracks: [4, 5] }));
    const third = await io.writeOutput({ kind: 'tracks', objectKey: key, localPath: local, task: producer(job) });
    expect(third.sha256).not.toBe(first.sha256);
    expect(await count()).toBe(1);
    const row = (await schema.pool.query(`SELECT file_id, sha256 FROM files WHERE job_id = $1`, [job])).rows[0];
    expect(row).toEqual({ file_id: third.object_key, sha256: third.sha256 });
    expect((await a.fetch(`/api/v1/files/${first.object_key}`, { method: 'HEAD' })).status).toBe(404);
    expect((await a.fetch(`/api/v1/files/${third.object_key}`, { method: 'HEAD' })).status).toBe(200);
    // A catalogued file lost on its SE (deleted behind the store's back) is written again; still one row.
    expect((await a.fetch(`/api/v1/files/${third.object_key}`, { method: 'DELETE' })).status).toBe(204);
    const rewritten = await io.writeOutput({ kind: 'tracks', objectKey: key, localPath: local, task: producer(job) });
    expect(rewritten).toEqual(third);
    expect((await a.fetch(`/api/v1/files/${third.object_key}`, { method: 'HEAD' })).status).toBe(200);
    expect(await count()).toBe(1);
    // Reading it back through the same store gives the new bytes.
    const dir = await mkdtemp(join(work, 'read-'));
    expect(await readFile(await io.openInput(third, dir), 'utf8')).toBe(JSON.stringify({ tracks: [4, 5] }));
  });

  it('an upload cut mid-body resumes at the offset the SE committed (no byte sent twice)', async () => {
    const a = await se('se-a', 'dc1');
    const bytes = testBytes(6 * MiB, 31);
    const local = join(work, 'cut-upload.bin');
    await writeFile(local, bytes);
    const proxy = await cuttingProxy(a.url, 2 * MiB, 1, 'request');
    try {
      const client = new StorageElementClient({ timeoutMs: 5_000, streamIdleTimeoutMs: 5_000 });
      const target = seEntry(a, 'dc1', proxy.url);
      const { reservation_id } = await client.reserve(target, bytes.length, 60_000);
      const outcome = await uploadFile(client, target, {
        fileId: 'f-cut-upload',
        localPath: local,
        sizeBytes: bytes.length,
        sha256: sha256Hex(bytes),
        reservationId: reservation_id,
        retry: { baseDelayMs: 10 },
      });
      expect(outcome).toBe('uploaded');
      expect(proxy.cuts()).toBe(1);
      const stored = await a.fetch('/api/v1/files/f-cut-upload');
      expect(sha256Hex(Buffer.from(await stored.arrayBuffer()))).toBe(sha256Hex(bytes));
      // The bytes that reached the SE before the cut were kept, the rest sent once.
      expect(await seBytesWritten(a)).toBe(bytes.length);
    } finally {
      await proxy.close();
    }
  });

  it("a dead run's open upload holding the output's file id does not block the re-run", async () => {
    const a = await se('se-a', 'dc1');
    const io = seIo([seEntry(a, 'dc1')]);
    const job = uniqueName('job');
    const key = 'acme/m-1/detect/v1/detections.jsonl';
    const local = join(work, `busy-${job}.jsonl`);
    const bytes = Buffer.from('{"frame":0}\n');
    await writeFile(local, bytes);
    // The crashed attempt: an upload created under the deterministic id, never finished.
    const stale = await a.fetch('/api/v1/uploads', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ file_id: outputFileId(job, key, sha256Hex(bytes)), size_bytes: bytes.length }),
    });
    expect(stale.status).toBe(201);
    const ref = await io.writeOutput({ kind: 'detections', objectKey: key, localPath: local, task: producer(job) });
    expect(ref.object_key.startsWith(`${outputFileId(job, key, sha256Hex(bytes))}-`)).toBe(true);
    expect((await a.fetch(`/api/v1/files/${ref.object_key}`, { method: 'HEAD' })).status).toBe(200);
    const again = await io.writeOutput({ kind: 'detections', objectKey: key, localPath: local, task: producer(job) });
    expect(again).toEqual(ref);
    const rows = await schema.pool.query('SELECT file_id FROM files WHERE job_id = $1', [job]);
    expect(rows.rows).toEqual([{ file_id: ref.object_key }]);
  });

  it('an output without its producing task is refused with a code', async () => {
    const a = await se('se-a', 'dc1');
    const io = seIo([seEntry(a, 'dc1')]);
    const local = join(work, 'orphan.bin');
    await writeFile(local, 'x');
    const error = await caught(io.writeOutput({ kind: 'x', objectKey: 'acme/m-1/detect/v1/x.bin', localPath: local }));
    expect(error.code).toBe('output_identity_missing');
  });
});

describe('createArtifactIo (the worker wiring)', () => {
  it('storage elements when STORAGE_ELEMENTS is set, the local folder otherwise; SEs need the database', () => {
    const list = JSON.stringify([{ storage_id: 'se-1', endpoint: 'http://127.0.0.1:1', token: 't', location: 'dc1' }]);
    expect(createArtifactIo({ env: { STORAGE_ELEMENTS: list }, db })).toBeInstanceOf(StorageElementArtifactIo);
    expect(createArtifactIo({ env: { WORKER_ARTIFACT_DIR: work } })).toBeInstanceOf(LocalArtifactIo);
    expect(() => createArtifactIo({ env: { STORAGE_ELEMENTS: list } })).toThrow(/STORAGE_ELEMENTS/);
    expect(() => createArtifactIo({ env: { STORAGE_ELEMENTS: '[{"storage_id":"x"}]' }, db })).toThrow(
      /STORAGE_ELEMENTS/,
    );
  });
});
