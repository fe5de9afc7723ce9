import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestRedis,
  createTestSchema,
  type TestRedis,
  type TestSchema,
  uniqueName,
  waitFor,
} from '../../../test/support/index.ts';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import {
  ingestEnv,
  METRICS_AUTH,
  metadataFor,
  type SeProcess,
  sha256Hex,
  startIngestInProcess,
  startSe,
  storageElementsJson,
  TusClient,
  testBytes,
} from './support/harness.ts';

const MiB = 2 ** 20;
let schema: TestSchema;
let redis: TestRedis;
const ses: SeProcess[] = [];
const ingests: RunningIngest[] = [];

beforeAll(async () => {
  schema = await createTestSchema('ingest_place');
  redis = await createTestRedis('ingest-place');
});
afterEach(async () => {
  await Promise.all(ingests.splice(0).map((i) => i.close()));
  await Promise.all(ses.splice(0).map((s) => s.stop()));
});
afterAll(async () => {
  await redis.close();
  await schema.close();
});

async function se(id: string, location: string, limitBytes: number, dataDir?: string): Promise<SeProcess> {
  const p = await startSe(
    { STORAGE_ELEMENT_ID: id, STORAGE_DATACENTER_LOCATION: location, STORAGE_CAPACITY_LIMIT_BYTES: String(limitBytes) },
    dataDir,
  );
  ses.push(p);
  return p;
}

/** Fills an SE behind ingest's back (another writer): its capacity cache entry goes stale. */
async function fillDirectly(target: SeProcess, bytes: number): Promise<void> {
  const body = testBytes(bytes, 99);
  const post = (path: string, b: unknown) =>
    target.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(b) });
  const created = (await (await post('/api/v1/uploads', { size_bytes: bytes })).json()) as { upload_id: string };
  const patched = await target.fetch(`/api/v1/uploads/${created.upload_id}`, {
    method: 'PATCH',
    headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body,
  });
  expect(patched.status).toBe(204);
  expect((await post(`/api/v1/uploads/${created.upload_id}/complete`, {})).status).toBe(201);
}

async function ingestOver(
  list: Array<{ se: SeProcess; id: string; location: string }>,
  env: Record<string, string> = {},
): Promise<{ ingest: RunningIngest; tus: TusClient }> {
  const ingest = await startIngestInProcess(
    ingestEnv({
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: `${redis.prefix}${uniqueName('i')}:`,
      STORAGE_ELEMENTS: storageElementsJson(list),
      ...env,
    }),
  );
  ingests.push(ingest);
  await waitFor(async () => (await ingest.monitor.status()).writable_storage_elements === list.length, {
    timeoutMs: 10_000,
  });
  const { token } = await createEdgeToken(ingest.db, 'acme');
  return { ingest, tus: new TusClient(ingest.url, token) };
}

describe('placement with reservations and 507 retry', () => {
  it("a full SE's 507 leads to a successful upload on another, with a lazy update of the full one", async () => {
    const full = await se('se-full', 'dc1', 4 * MiB);
    const roomy = await se('se-roomy', 'dc2', 64 * MiB);
    const { ingest, tus } = await ingestOver(
      [
        { se: full, id: 'se-full', location: 'dc1' },
        { se: roomy, id: 'se-roomy', location: 'dc2' },
      ],
      // Slow polling: the cache keeps believing se-full is empty; affinity sends the file there first.
      { CAPACITY_MONITOR_BASE_INTERVAL: '60', CAPACITY_MONITOR_MAX_INTERVAL: '60', INGEST_PREFERRED_LOCATIONS: 'dc1' },
    );
    await fillDirectly(full, 3 * MiB);
    const bytes = testBytes(2 * MiB, 5);
    const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-507' }));
    expect((await tus.send(path, bytes)).status).toBe(204);
    const row = (await schema.pool.query(`SELECT storage_id FROM files WHERE match_id = 'm-507'`)).rows[0];
    expect(row.storage_id).toBe('se-roomy');
    // The 507 triggered a lazy update: the cache now knows se-full has < 2 MiB.
    await waitFor(
      async () => {
        const c = (await ingest.monitor.candidates()).find((x) => x.storage_id === 'se-full');
        return c !== undefined && c.available < 2 * MiB && c.full_marked_at === null;
      },
      { timeoutMs: 5_000 },
    );
    const metrics = await (await fetch(`${ingest.url}/metrics`, METRICS_AUTH)).text();
    expect(metrics).toMatch(/ingest_placements_total\{[^}]*outcome="after_507"[^}]*\} 1/);
    expect(metrics).toMatch(/ingest_storage_insufficient_total\{[^}]*storage_id="se-full"[^}]*\} 1/);
    expect(metrics).toMatch(/lazy_update_triggers_total\{[^}]*storage_id="se-full"[^}]*\} 1/);
    const full2 = await full.fetch('/api/v1/capacity');
    expect(((await full2.json()) as { reserved: number }).reserved).toBe(0);
  });

  it('answers 507 with Retry-After and a JSON body saying why when no SE can take the file; nothing is recorded', async () => {
    const a = await se('se-1', 'dc1', 4 * MiB);
    const b = await se('se-2', 'dc2', 4 * MiB);
    const c = await se('se-3', 'dc3', 4 * MiB);
    const { tus } = await ingestOver(
      [
        { se: a, id: 'se-1', location: 'dc1' },
        { se: b, id: 'se-2', location: 'dc2' },
        { se: c, id: 'se-3', location: 'dc3' },
      ],
      {
        CAPACITY_MONITOR_BASE_INTERVAL: '60',
        CAPACITY_MONITOR_MAX_INTERVAL: '60',
        INGEST_PLACEMENT_MAX_ATTEMPTS: '2',
        INGEST_RETRY_AFTER_SECONDS: '45',
      },
    );
    await Promise.all([fillDirectly(a, 3 * MiB), fillDirectly(b, 3 * MiB), fillDirectly(c, 3 * MiB)]);
    const bytes = testBytes(2 * MiB, 6);
    const answer = await tus.create(bytes.length, metadataFor(bytes, { match_id: 'm-none' }));
    expect(answer.status).toBe(507);
    expect(answer.headers.get('retry-after')).toBe('45');
    expect(answer.headers.get('content-type')).toContain('application/json');
    const body = (await answer.json()) as {
      code: string;
      message: string;
      attempts: Array<{ outcome: string }>;
      requested: number;
    };
    expect(body.code).toBe('insufficient_storage');
    expect(body.requested).toBe(2 * MiB);
    // At most INGEST_PLACEMENT_MAX_ATTEMPTS reservations, each refused with 507.
    expect(body.attempts).toHaveLength(2);
    expect(body.attempts.every((x) => x.outcome === 'insufficient_storage')).toBe(true);
    expect(
      (await schema.pool.query(`SELECT count(*)::int AS n FROM uploads WHERE match_id = 'm-none'`)).rows[0].n,
    ).toBe(0);
    // Once the lazy updates landed (waited for, by trying again), the next try is refused without
    // a reservation at all.
    const why = await waitFor(
      async () => {
        const again = await tus.create(bytes.length, metadataFor(bytes, { match_id: 'm-none' }));
        expect(again.status).toBe(507);
        const body = (await again.json()) as { attempts: unknown[]; not_eligible: Record<string, string> };
        return Object.values(body.not_eligible).includes('too_small') ? body : undefined;
      },
      { intervalMs: 200, message: 'the lazy updates landed' },
    );
    expect(why.attempts.length).toBeLessThanOrEqual(1);
    expect(Object.values(why.not_eligible)).toContain('too_small');
  });

  it('an SE that fills up during an upload: the upload moves to another SE and completes there', async (ctx) => {
    const mountDir = mkdtempSync(join(tmpdir(), 'se-tmpfs-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mountDir]);
    } catch (error) {
      ctx.skip(`cannot mount a tmpfs to make a disk run full (${(error as Error).message}); needs root`);
      return;
    }
    try {
      const dataDir = join(mountDir, 'se');
      mkdirSync(dataDir);
      const small = await se('se-small', 'dc1', 64 * MiB, dataDir);
      const big = await se('se-big', 'dc2', 64 * MiB);
      const { tus } = await ingestOver(
        [
          { se: small, id: 'se-small', location: 'dc1' },
          { se: big, id: 'se-big', location: 'dc2' },
        ],
        { INGEST_PREFERRED_LOCATIONS: 'dc1' },
      );
      const bytes = testBytes(3 * MiB, 8);
      const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-fill' }));
      expect((await tus.patch(path, 0, bytes.subarray(0, MiB))).status).toBe(204);
      // Someone else fills the disk under the SE after it promised the space.
      const fd = openSync(join(mountDir, 'filler'), 'w');
      try {
        const block = Buffer.alloc(256 * 1024, 1);
        for (;;) writeSync(fd, block);
      } catch {
        // ENOSPC: the disk is full now
      } finally {
        closeSync(fd);
      }
      const second = await tus.patch(path, MiB, bytes.subarray(MiB, 2 * MiB));
      expect(second.status).toBe(503);
      expect(await second.json()).toMatchObject({ code: 'upload_relocated' });
      expect(await tus.offset(path)).toEqual({ status: 200, offset: 0 });
      expect((await tus.send(path, bytes)).status).toBe(204);
      const row = (await schema.pool.query(`SELECT storage_id, sha256 FROM files WHERE match_id = 'm-fill'`)).rows[0];
      expect(row).toEqual({ storage_id: 'se-big', sha256: sha256Hex(bytes) });
      const reserved = (await (await small.fetch('/api/v1/capacity')).json()) as { reserved: number };
      expect(reserved.reserved).toBe(0);
      await small.stop();
    } finally {
      execFileSync('umount', ['-l', mountDir]);
    }
  });
});
