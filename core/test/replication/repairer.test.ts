/**
 * Replication end to end on real storage elements (child processes) and a
 * real ingest: every upload gets a verified copy in a second datacenter
 * before the edge is told (X-Content-SHA256, Polyvision-Copies); a lost SE's
 * copies are made again elsewhere by the repairer; reads fall back to another
 * copy; an audit drops a copy that vanished and the next scan replaces it.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestSchema, waitFor } from '../../../test/support/index.ts';
import { compileCapacityMonitorSettings, type StorageElementConfig } from '../../src/capacity/index.ts';
import { createEdgeToken, type RunningIngest } from '../../src/ingest/index.ts';
import { StorageElementClient } from '../../src/ingest/se-client.ts';
import { StorageElementArtifactIo, workerCapacityView } from '../../src/workers/artifacts/index.ts';
import {
  METRICS_AUTH,
  metadataFor,
  SE_TOKEN,
  type SeProcess,
  sha256Hex,
  TusClient,
  testBytes,
} from '../ingest/support/harness.ts';
import { type IngestWorld, startIngestWorld } from '../ingest/support/world.ts';

let world: IngestWorld;
let schema: TestSchema;
let ses: Record<string, SeProcess>;
const LOCATIONS: Record<string, string> = { 'se-a': 'dc1', 'se-b': 'dc2', 'se-c': 'dc2' };
let ingest: RunningIngest;
let tus: TusClient;
let work: string;

interface CopyRow {
  storage_id: string;
  object_key: string;
  state: string;
  sha256: string;
}

async function copies(fileId: string): Promise<CopyRow[]> {
  const { rows } = await schema.pool.query(
    `SELECT storage_id, object_key, state, sha256 FROM file_copies WHERE file_id = $1 ORDER BY storage_id`,
    [fileId],
  );
  return rows as CopyRow[];
}

async function seSha(id: string, key: string): Promise<string | null> {
  const response = await (ses[id] as SeProcess).fetch(`/api/v1/files/${key}`);
  if (response.status !== 200) return null;
  return createHash('sha256')
    .update(Buffer.from(await response.arrayBuffer()))
    .digest('hex');
}

async function upload(bytes: Buffer, matchId: string): Promise<{ last: Response; fileId: string }> {
  const path = await tus.createOk(bytes.length, metadataFor(bytes, { match_id: matchId, kind: 'artifact' }));
  const last = await tus.send(path, bytes);
  return { last, fileId: `f-${path.split('/').pop()}` };
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'pv-replication-'));
  world = await startIngestWorld({
    name: 'replication',
    ses: Object.entries(LOCATIONS).map(([id, location]) => ({ id, location, env: { STORAGE_MODE: 'edit' } })),
    env: {
      POLYVISION_TOPIC_PREFIX: 'replicationtest',
      REPLICATION_SCAN_INTERVAL_MS: '300',
      REPLICATION_SE_LOST_AFTER_MS: '1000',
      REPLICATION_AUDIT_INTERVAL_MS: '500',
      REPLICATION_LEADER_LEASE_MS: '2000',
    },
  });
  ({ schema, ses, ingest } = world);
  tus = new TusClient(ingest.url, (await createEdgeToken(ingest.db, 'acme', 'edge-1')).token);
}, 60_000);

afterAll(async () => {
  await world?.close();
  await rm(work, { recursive: true, force: true });
});

describe('replication factor 2 across datacenters', () => {
  let fileId: string;
  let bytes: Buffer;
  let stopped: string;

  it('confirms an upload only with two verified copies, in two datacenters', async () => {
    bytes = testBytes(700_000, 21);
    const { last, fileId: id } = await upload(bytes, 'm-rep-1');
    fileId = id;
    expect(last.status).toBe(204);
    expect(last.headers.get('polyvision-copies')).toBe('2/2');
    expect(last.headers.get('x-content-sha256')).toBe(sha256Hex(bytes));
    const rows = await copies(fileId);
    expect(rows.map((r) => r.state)).toEqual(['verified', 'verified']);
    expect(new Set(rows.map((r) => LOCATIONS[r.storage_id])).size).toBe(2);
    for (const row of rows) expect(await seSha(row.storage_id, row.object_key)).toBe(sha256Hex(bytes));
  });

  it('restores the factor when an SE is lost: a new verified copy on the other SE of its datacenter', async () => {
    const rows = await copies(fileId);
    stopped = (rows.find((r) => LOCATIONS[r.storage_id] === 'dc2') as CopyRow).storage_id;
    const spare = stopped === 'se-b' ? 'se-c' : 'se-b';
    await (ses[stopped] as SeProcess).stop();
    await waitFor(async () => (await copies(fileId)).some((r) => r.storage_id === spare && r.state === 'verified'), {
      timeoutMs: 45_000,
      message: `a verified copy on ${spare}`,
    });
    expect(await seSha(spare, fileId)).toBe(sha256Hex(bytes));
    // Readiness and metrics show no file short of copies any more (copies on the lost SE do not count).
    await waitFor(
      async () => {
        const ready = (await (await fetch(`${ingest.url}/health/ready`, METRICS_AUTH)).json()) as {
          replication: { under_replicated_files: number; required_copies: number };
        };
        return ready.replication.required_copies === 2 && ready.replication.under_replicated_files === 0;
      },
      { timeoutMs: 10_000, message: 'readiness: 0 under-replicated files' },
    );
    const metrics = await (await fetch(`${ingest.url}/metrics`, METRICS_AUTH)).text();
    expect(metrics).toMatch(/replication_files_under_replicated\{[^}]*\} 0/);
    expect(metrics).toMatch(/replication_storage_elements_lost\{[^}]*\} 1/);
  }, 60_000);

  it('reads fall back to another verified copy when the first SE is down', async () => {
    const list: StorageElementConfig[] = Object.entries(LOCATIONS).map(([id, location]) => ({
      storage_id: id,
      endpoint: (ses[id] as SeProcess).url,
      token: SE_TOKEN,
      location,
    }));
    const io = new StorageElementArtifactIo({
      storageElements: list,
      client: new StorageElementClient({ timeoutMs: 2_000, streamIdleTimeoutMs: 2_000 }),
      capacity: workerCapacityView({
        redis: null,
        keyPrefix: '',
        storageElements: list,
        settings: compileCapacityMonitorSettings(),
        instanceId: 'test',
      }),
      db: ingest.db,
      placement: {
        maxAttempts: 3,
        headroomBytes: 0,
        preferredLocations: [],
        reservationTtlMs: 60_000,
        retryAfterMs: 1_000,
      },
    });
    const path = await io.openInput(
      { kind: 'artifact', storage_id: stopped, object_key: fileId, size_bytes: bytes.length, sha256: sha256Hex(bytes) },
      work,
    );
    expect(sha256Hex(await readFile(path))).toBe(sha256Hex(bytes));
  });

  it('an audit drops a copy that vanished from its SE, and the next scan copies the file there again', async () => {
    const before = await copies(fileId);
    expect(before.some((r) => r.storage_id === 'se-a')).toBe(true);
    const deleted = await (ses['se-a'] as SeProcess).fetch(`/api/v1/files/${fileId}`, { method: 'DELETE' });
    expect(deleted.status).toBeLessThan(300);
    expect(await seSha('se-a', fileId)).toBeNull();
    await waitFor(async () => (await seSha('se-a', fileId)) === sha256Hex(bytes), {
      timeoutMs: 30_000,
      message: 'the dc1 copy made again',
    });
    await waitFor(async () => (await copies(fileId)).find((r) => r.storage_id === 'se-a')?.state === 'verified', {
      timeoutMs: 10_000,
    });
  }, 45_000);
});
