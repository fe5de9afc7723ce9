import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestRedis,
  createTestSchema,
  serviceUrl,
  type TestRedis,
  type TestSchema,
  waitFor,
} from '../../../test/support/index.ts';
import { createDatabase, type Database } from '../../src/db/index.ts';
import { createEdgeToken } from '../../src/ingest/index.ts';
import {
  type IngestProcess,
  ingestEnv,
  metadataFor,
  type SeProcess,
  sha256Hex,
  spawnIngest,
  startSe,
  storageElementsJson,
  TusClient,
  testBytes,
} from './support/harness.ts';

const MiB = 2 ** 20;
let schema: TestSchema;
let redis: TestRedis;
let se1: SeProcess;
let se2: SeProcess;
let db: Database;
let env: Record<string, string>;
let token: string;

beforeAll(async () => {
  schema = await createTestSchema('ingest_resume');
  redis = await createTestRedis('ingest-resume');
  [se1, se2] = await Promise.all([
    startSe({ STORAGE_ELEMENT_ID: 'se-a', STORAGE_DATACENTER_LOCATION: 'dc1' }),
    startSe({ STORAGE_ELEMENT_ID: 'se-b', STORAGE_DATACENTER_LOCATION: 'dc2' }),
  ]);
  env = ingestEnv({
    DATABASE_SCHEMA: schema.schema,
    REDIS_KEY_PREFIX: redis.prefix,
    STORAGE_ELEMENTS: storageElementsJson([
      { se: se1, id: 'se-a', location: 'dc1' },
      { se: se2, id: 'se-b', location: 'dc2' },
    ]),
  });
  db = createDatabase({ databaseUrl: serviceUrl('DATABASE_URL'), schema: schema.schema });
});

afterAll(async () => {
  await db?.close();
  await Promise.all([se1?.stop(), se2?.stop()]);
  await redis?.close();
  await schema?.close();
});

async function ready(p: IngestProcess): Promise<void> {
  await waitFor(async () => (await fetch(`${p.url}/health/ready`)).status === 200, { timeoutMs: 15_000 });
}

describe('any replica continues an upload', () => {
  it('an upload started on replica A, which is killed (SIGKILL) mid-PATCH, is resumed and finished through replica B', async () => {
    const a = await spawnIngest({ ...env, INGEST_INSTANCE_ID: 'replica-a' });
    const b = await spawnIngest({ ...env, INGEST_INSTANCE_ID: 'replica-b' });
    try {
      await Promise.all([ready(a), ready(b)]);
      token = (await createEdgeToken(db, 'acme', 'edge-7')).token;
      const tusA = new TusClient(a.url, token);
      const tusB = new TusClient(b.url, token);
      const bytes = testBytes(6 * MiB, 21);
      const path = await tusA.createOk(bytes.length, metadataFor(bytes, { match_id: 'm-resume' }));
      expect((await tusA.patch(path, 0, bytes.subarray(0, MiB))).status).toBe(204);

      // A PATCH that streams slowly into A; A dies in the middle of it.
      let sent = MiB;
      const slow = Readable.from(
        (async function* () {
          for (let offset = MiB; offset < 4 * MiB; offset += 256 * 1024) {
            yield bytes.subarray(offset, offset + 256 * 1024);
            sent = offset + 256 * 1024;
            await new Promise((r) => setTimeout(r, 50));
          }
        })(),
      );
      const inFlight = fetch(`${a.url}${path}`, {
        method: 'PATCH',
        headers: tusA.headers({ 'upload-offset': String(MiB), 'content-type': 'application/offset+octet-stream' }),
        body: Readable.toWeb(slow) as ReadableStream,
        duplex: 'half',
      } as RequestInit).catch((error: unknown) => error);
      await waitFor(() => sent >= 2 * MiB, { timeoutMs: 10_000 });
      await a.kill9();
      await inFlight;

      // B answers with the offset the SE committed (the tus lock of the dead replica lapses after its lease).
      const head = await tusB.offset(path);
      expect(head.status).toBe(200);
      expect(head.offset).toBeGreaterThanOrEqual(MiB);
      expect(head.offset).toBeLessThanOrEqual(4 * MiB);
      const last = await tusB.send(path, bytes, head.offset);
      expect(last.status).toBe(204);
      const files = await schema.pool.query(`SELECT sha256, size_bytes FROM files WHERE match_id = 'm-resume'`);
      expect(files.rows).toEqual([{ sha256: sha256Hex(bytes), size_bytes: String(bytes.length) }]);
      expect(
        (await schema.pool.query(`SELECT count(*)::int AS n FROM outbox WHERE message_key = 'acme:m-resume'`)).rows[0]
          .n,
      ).toBe(1);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('two replicas serve alternate chunks of one upload', async () => {
    const a = await spawnIngest({ ...env, INGEST_INSTANCE_ID: 'replica-c' });
    const b = await spawnIngest({ ...env, INGEST_INSTANCE_ID: 'replica-d' });
    try {
      await Promise.all([ready(a), ready(b)]);
      const clients = [new TusClient(a.url, token), new TusClient(b.url, token)];
      const bytes = testBytes(2 * MiB + 7, 23);
      const path = await (clients[0] as TusClient).createOk(
        bytes.length,
        metadataFor(bytes, { match_id: 'm-alt', kind: 'camera' }),
      );
      let offset = 0;
      let i = 0;
      while (offset < bytes.length) {
        const client = clients[i++ % 2] as TusClient;
        const r = await client.patch(path, offset, bytes.subarray(offset, offset + 300_000));
        expect(r.status).toBe(204);
        offset = Number(r.headers.get('upload-offset'));
      }
      expect((await schema.pool.query(`SELECT count(*)::int AS n FROM files WHERE match_id = 'm-alt'`)).rows[0].n).toBe(
        1,
      );
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
