import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceUrl, type TestRedis, type TestSchema, waitFor } from '../../../test/support/index.ts';
import { createEdgeToken, type RunningIngest, revokeEdgeToken } from '../../src/ingest/index.ts';
import {
  ingestEnv,
  metadataFor,
  type SeProcess,
  sha256Hex,
  startIngestInProcess,
  storageElementsJson,
  TusClient,
  testBytes,
} from './support/harness.ts';
import { type IngestWorld, startIngestWorld } from './support/world.ts';

let world: IngestWorld;
let schema: TestSchema;
let redis: TestRedis;
let se1: SeProcess;
let se2: SeProcess;
let ingest: RunningIngest;
let tus: TusClient;
let token: string;

async function seReserved(se: SeProcess): Promise<number> {
  const r = await se.fetch('/api/v1/capacity');
  return ((await r.json()) as { reserved: number }).reserved;
}

beforeAll(async () => {
  const limit = { STORAGE_CAPACITY_LIMIT_BYTES: String(64 * 2 ** 20) };
  world = await startIngestWorld({
    name: 'ingest_upload',
    ses: [
      { id: 'se-a', location: 'dc1', env: limit },
      { id: 'se-b', location: 'dc2', env: limit },
    ],
    env: { POLYVISION_TOPIC_PREFIX: 'ingesttest', INGEST_MAX_UPLOAD_BYTES: String(32 * 2 ** 20) },
  });
  ({ schema, redis, ingest } = world);
  [se1, se2] = [world.ses['se-a'] as SeProcess, world.ses['se-b'] as SeProcess];
  token = (await createEdgeToken(ingest.db, 'acme', 'edge-1')).token;
  tus = new TusClient(ingest.url, token);
});

afterAll(async () => {
  await world?.close();
});

describe('tus uploads through ingest to storage elements', () => {
  it('streams a panorama in chunks, resumes by HEAD, records the catalog row and job.submit together', async () => {
    const bytes = testBytes(3 * 2 ** 20 + 123);
    const path = await tus.createOk(bytes.length, metadataFor(bytes));
    const first = await tus.patch(path, 0, bytes.subarray(0, 2 ** 20));
    expect(first.status).toBe(204);
    expect(first.headers.get('upload-offset')).toBe(String(2 ** 20));
    expect(await tus.offset(path)).toEqual({ status: 200, offset: 2 ** 20 });
    const last = await tus.send(path, bytes, 2 ** 20);
    expect(last.status).toBe(204);
    expect(last.headers.get('upload-offset')).toBe(String(bytes.length));

    const id = path.split('/').pop() as string;
    const files = await schema.pool.query('SELECT * FROM files');
    expect(files.rows).toHaveLength(1);
    const file = files.rows[0];
    expect(file).toMatchObject({
      organization_id: 'acme',
      match_id: 'm-1',
      kind: 'panorama',
      sha256: sha256Hex(bytes),
      object_key: `f-${id}`,
    });
    expect(Number(file.size_bytes)).toBe(bytes.length);
    const outbox = await schema.pool.query('SELECT topic, message_key, payload FROM outbox');
    expect(outbox.rows).toHaveLength(1);
    expect(outbox.rows[0].topic).toBe('ingesttest.jobs.commands');
    expect(outbox.rows[0].message_key).toBe('acme:m-1');
    expect(outbox.rows[0].payload).toMatchObject({
      type: 'job.submit',
      job_id: `job-${id}`,
      inputs: [{ kind: 'panorama', storage_id: file.storage_id, sha256: sha256Hex(bytes) }],
    });
    // The bytes are on the chosen SE, whole and checked.
    const se = file.storage_id === 'se-a' ? se1 : se2;
    const stored = await se.fetch(`/api/v1/files/f-${id}`);
    expect(stored.status).toBe(200);
    expect(
      createHash('sha256')
        .update(Buffer.from(await stored.arrayBuffer()))
        .digest('hex'),
    ).toBe(sha256Hex(bytes));
    // A HEAD after completion still says complete; a repeated completion changes nothing.
    expect(await tus.offset(path)).toEqual({ status: 200, offset: bytes.length });
    await ingest.store.finish(id);
    expect((await schema.pool.query('SELECT count(*)::int AS n FROM outbox')).rows[0].n).toBe(1);
  });

  it('answers 409 to a PATCH at the wrong offset and keeps the bytes', async () => {
    const bytes = testBytes(100_000, 4);
    const path = await tus.createOk(bytes.length, metadataFor(bytes, { kind: 'artifact', match_id: 'm-409' }));
    expect((await tus.patch(path, 0, bytes.subarray(0, 40_000))).status).toBe(204);
    expect((await tus.patch(path, 10_000, bytes.subarray(10_000, 20_000))).status).toBe(409);
    expect((await tus.patch(path, 50_000, bytes.subarray(50_000))).status).toBe(409);
    expect(await tus.offset(path)).toEqual({ status: 200, offset: 40_000 });
    expect((await tus.send(path, bytes, 40_000)).status).toBe(204);
  });

  it('records a camera file without a job', async () => {
    const bytes = testBytes(1000, 3);
    const path = await tus.createOk(
      bytes.length,
      metadataFor(bytes, { kind: 'camera', filename: 'cam1.mp4', match_id: 'm-2' }),
    );
    expect((await tus.send(path, bytes)).status).toBe(204);
    const rows = await schema.pool.query(`SELECT kind FROM files WHERE match_id = 'm-2'`);
    expect(rows.rows).toEqual([{ kind: 'camera' }]);
    expect(
      (await schema.pool.query(`SELECT count(*)::int AS n FROM outbox WHERE message_key = 'acme:m-2'`)).rows[0].n,
    ).toBe(0);
  });

  it('a wrong whole-file sha256 answers 460, leaves nothing in the catalog and releases the reservation', async () => {
    const bytes = testBytes(200_000, 9);
    const path = await tus.createOk(
      bytes.length,
      metadataFor(bytes, { sha256: sha256Hex(Buffer.from('other')), match_id: 'm-bad' }),
    );
    const answer = await tus.send(path, bytes);
    expect(answer.status).toBe(460);
    expect(await answer.json()).toMatchObject({ code: 'checksum_mismatch', actual: sha256Hex(bytes) });
    expect((await schema.pool.query(`SELECT count(*)::int AS n FROM files WHERE match_id = 'm-bad'`)).rows[0].n).toBe(
      0,
    );
    expect(
      (await schema.pool.query(`SELECT count(*)::int AS n FROM outbox WHERE message_key = 'acme:m-bad'`)).rows[0].n,
    ).toBe(0);
    const id = path.split('/').pop();
    const row = (await schema.pool.query('SELECT status, failure FROM uploads WHERE upload_id = $1', [id])).rows[0];
    expect(row.status).toBe('failed');
    expect(row.failure.code).toBe('checksum_mismatch');
    expect(await seReserved(se1)).toBe(0);
    expect(await seReserved(se2)).toBe(0);
    expect((await tus.offset(path)).status).toBe(410);
  });

  it('checks Upload-Checksum per PATCH (checksum extension) before bytes reach the SE', async () => {
    const options = await fetch(`${ingest.url}/api/v1/uploads`, { method: 'OPTIONS' });
    expect(options.headers.get('tus-extension')).toContain('checksum');
    expect(options.headers.get('tus-checksum-algorithm')).toContain('sha256');
    const bytes = testBytes(50_000, 11);
    const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-ck' }));
    const wrong = await tus.patch(path, 0, bytes, {
      'upload-checksum': `sha256 ${createHash('sha256').update('nope').digest('base64')}`,
    });
    expect(wrong.status).toBe(460);
    expect((await tus.offset(path)).offset).toBe(0);
    const right = await tus.patch(path, 0, bytes, {
      'upload-checksum': `sha256 ${createHash('sha256').update(bytes).digest('base64')}`,
    });
    expect(right.status).toBe(204);
    expect(right.headers.get('upload-offset')).toBe(String(bytes.length));
    const bad = await tus.create(10, metadataFor(bytes));
    const badPath = new URL(bad.headers.get('location') ?? '', ingest.url).pathname;
    const unsupported = await tus.patch(badPath, 0, bytes.subarray(0, 10), { 'upload-checksum': 'crc99 AAAA' });
    expect(unsupported.status).toBe(400);
    expect(await unsupported.json()).toMatchObject({ code: 'checksum_algorithm_unsupported' });
    await fetch(`${ingest.url}${badPath}`, { method: 'DELETE', headers: tus.headers() });
  });

  it('termination aborts the SE upload and releases its reservation', async () => {
    const bytes = testBytes(300_000, 13);
    const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-del' }));
    await tus.patch(path, 0, bytes.subarray(0, 1000));
    expect((await seReserved(se1)) + (await seReserved(se2))).toBeGreaterThan(0);
    const deleted = await fetch(`${ingest.url}${path}`, { method: 'DELETE', headers: tus.headers() });
    expect(deleted.status).toBe(204);
    expect(await seReserved(se1)).toBe(0);
    expect(await seReserved(se2)).toBe(0);
    expect((await tus.offset(path)).status).toBe(410);
  });
});

describe('bad input from an edge', () => {
  it('refuses a missing or wrong token', async () => {
    const bytes = testBytes(10);
    const none = await fetch(`${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { 'tus-resumable': '1.0.0', 'upload-length': '10' },
    });
    expect(none.status).toBe(401);
    expect(
      await new TusClient(ingest.url, 'pve_0000000000000000_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx').create(
        10,
        metadataFor(bytes),
      ),
    ).toHaveProperty('status', 401);
    const { token: revoked, token_id } = await createEdgeToken(ingest.db, 'acme');
    expect(await revokeEdgeToken(ingest.db, token_id)).toBe(true);
    expect((await new TusClient(ingest.url, revoked).create(10, metadataFor(bytes))).status).toBe(401);
  });

  it('refuses an Upload-Length above the limit with 413 and JSON', async () => {
    const answer = await tus.create(33 * 2 ** 20, metadataFor(testBytes(10)));
    expect(answer.status).toBe(413);
    expect(await answer.json()).toMatchObject({ code: 'upload_too_large', max_upload_bytes: 32 * 2 ** 20 });
  });

  it('refuses missing, malformed and oversized metadata', async () => {
    const bytes = testBytes(10);
    const missing = await tus.create(10, '');
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: 'invalid_metadata' });
    const { sha256: _drop, ...noSha } = metadataFor(bytes);
    const noShaAnswer = await tus.create(10, noSha);
    expect(noShaAnswer.status).toBe(400);
    expect(await noShaAnswer.json()).toMatchObject({ code: 'invalid_metadata', field: 'sha256' });
    const badKind = await tus.create(10, metadataFor(bytes, { kind: 'movie' }));
    expect(await badKind.json()).toMatchObject({ code: 'invalid_metadata', field: 'kind' });
    const traversal = await tus.create(10, metadataFor(bytes, { filename: '../etc/passwd' }));
    expect(await traversal.json()).toMatchObject({ code: 'invalid_metadata', field: 'filename' });
    const garbage = await tus.create(10, 'organization_id %%%');
    expect(await garbage.json()).toMatchObject({ code: 'invalid_metadata' });
    const huge = await tus.create(10, metadataFor(bytes, { filename: 'x'.repeat(5000) }));
    expect(huge.status).toBe(400);
    expect(await huge.json()).toMatchObject({ code: 'metadata_too_large' });
    expect(
      (await schema.pool.query(`SELECT count(*)::int AS n FROM uploads WHERE size_bytes = 10 AND status = 'receiving'`))
        .rows[0].n,
    ).toBe(0);
  });

  it('refuses an organization the token does not belong to', async () => {
    const bytes = testBytes(10);
    const answer = await tus.create(10, metadataFor(bytes, { organization_id: 'globex' }));
    expect(answer.status).toBe(403);
    expect(await answer.json()).toMatchObject({ code: 'organization_forbidden' });
    // Another organization's token cannot touch acme's uploads.
    const path = await tus.createOk(10, metadataFor(bytes, { match_id: 'm-org' }));
    const other = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'globex')).token);
    expect((await other.offset(path)).status).toBe(404);
    expect((await other.patch(path, 0, bytes)).status).toBe(404);
    expect((await tus.send(path, bytes)).status).toBe(204);
  });

  it('refuses a deferred length', async () => {
    const answer = await fetch(`${ingest.url}/api/v1/uploads`, {
      method: 'POST',
      headers: tus.headers({ 'upload-defer-length': '1' }),
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ code: 'upload_length_required' });
  });
});

describe('expiration', () => {
  it('an expired upload answers 410 and the sweep releases its reservation', async () => {
    const short = await startIngestInProcess(
      ingestEnv({
        DATABASE_URL: serviceUrl('DATABASE_URL'),
        DATABASE_SCHEMA: schema.schema,
        REDIS_KEY_PREFIX: redis.prefix,
        // Long enough that the first PATCH lands before it on a loaded host (1 s did not, at load 20).
        INGEST_UPLOAD_EXPIRATION_MS: '5000',
        INGEST_EXPIRY_SWEEP_INTERVAL_MS: '200',
        STORAGE_ELEMENTS: storageElementsJson([
          { se: se1, id: 'se-a', location: 'dc1' },
          { se: se2, id: 'se-b', location: 'dc2' },
        ]),
      }),
    );
    try {
      const client = new TusClient(short.url, token);
      await waitFor(async () => (await short.monitor.status()).writable_storage_elements === 2, { timeoutMs: 10_000 });
      const bytes = testBytes(100_000, 17);
      const path = await client.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-exp' }));
      expect((await client.patch(path, 0, bytes.subarray(0, 100))).status).toBe(204);
      await waitFor(
        async () =>
          (await schema.pool.query(`SELECT status FROM uploads WHERE match_id = 'm-exp'`)).rows[0]?.status ===
          'expired',
        { timeoutMs: 10_000 },
      );
      const late = await client.patch(path, 100, bytes.subarray(100, 200));
      expect(late.status).toBe(410);
      expect(await seReserved(se1)).toBe(0);
      expect(await seReserved(se2)).toBe(0);
      expect((await schema.pool.query(`SELECT count(*)::int AS n FROM files WHERE match_id = 'm-exp'`)).rows[0].n).toBe(
        0,
      );
    } finally {
      await short.close();
    }
  });
});
