/**
 * The edge keeps a file until every copy of it is verified on the core:
 * against a real ingest and two storage elements in two datacenters (all
 * processes, HTTP only), with the second datacenter's SE frozen (SIGSTOP)
 * the upload completes but is not confirmed (`Polyvision-Copies: 1/2`, no
 * `X-Content-SHA256`) and the spool keeps the file; once the SE is back, the
 * repairer makes the copy and `drain({untilConfirmed})` ends with the file confirmed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServiceProcess, waitFor } from '../../test/support/index.ts';
import { Alarms } from '../src/alarms/index.ts';
import { Spool } from '../src/spool/index.ts';
import { Uploader } from '../src/upload/index.ts';
import { copiesShort } from '../src/upload/uploader.ts';
import { type CoreWorld, startCoreWorld } from './support/core-world.ts';

const SE_TOKEN = 'se-token-edge-copies';
const METRICS_TOKEN = 'metrics-token-edge-copies-0123456789';

let work: string;
let core: CoreWorld;
let seB: ServiceProcess;
let ingest: ServiceProcess;
let token: string;
let frozen = false;

async function writableSes(): Promise<number> {
  const response = await fetch(`${ingest.url}/health/ready`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const body = (await response.json()) as { capacity_monitor?: { writable_storage_elements?: number } };
  return body.capacity_monitor?.writable_storage_elements ?? -1;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'edge-copies-'));
  core = await startCoreWorld({
    name: 'edge_copies',
    ses: [
      { id: 'se-copies-a', location: 'dc1' },
      { id: 'se-copies-b', location: 'dc2' },
    ],
    seToken: SE_TOKEN,
    env: {
      POLYVISION_TOPIC_PREFIX: 'edgecopies',
      METRICS_TOKENS: METRICS_TOKEN,
      CAPACITY_MONITOR_MAX_INTERVAL: '1',
      CAPACITY_MONITOR_HTTP_TIMEOUT: '1',
      CAPACITY_MONITOR_HTTP_RETRIES: '0',
      INGEST_SE_TIMEOUT_MS: '2000',
      REPLICATION_SCAN_INTERVAL_MS: '500',
      REPLICATION_CONFIRM_WAIT_MS: '500',
      REPLICATION_LEADER_LEASE_MS: '2000',
    },
    edge: { organizationId: 'org-1', edgeId: 'edge-copies' },
  });
  ({ ingest, token } = core);
  seB = core.ses['se-copies-b'] as ServiceProcess;
  await waitFor(async () => (await writableSes()) === 2, { timeoutMs: 30_000, message: 'both SEs writable' });
}, 120_000);

afterAll(async () => {
  if (frozen) seB?.child.kill('SIGCONT');
  await core?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('edge confirmation waits for every copy', () => {
  it('keeps the file while the second datacenter is down, confirms it once the copy is verified', async () => {
    seB.child.kill('SIGSTOP');
    frozen = true;
    await waitFor(async () => (await writableSes()) === 1, { timeoutMs: 30_000, message: 'dc2 SE seen unreachable' });

    const alarms = new Alarms();
    const spool = await Spool.open({ dir: join(work, 'spool'), alarms, minFreeBytes: 0 });
    try {
      const path = join(work, 'p.mp4');
      await writeFile(path, randomBytes(300_000));
      const row = await spool.add(path, { matchId: 'm-copies', kind: 'panorama', source: 'panorama', seq: 1 });
      const uploader = new Uploader({
        spool,
        alarms,
        ingestUrl: ingest.url,
        token,
        organizationId: 'org-1',
        baseDelayMs: 100,
      });
      await uploader.drain(AbortSignal.timeout(30_000));
      const uploaded = spool.journal.get(row.id);
      expect(uploaded?.state).toBe('unconfirmed');
      expect((await stat(spool.pathOf(row))).size).toBe(300_000);
      const head = await fetch(uploaded?.uploadUrl ?? '', {
        method: 'HEAD',
        headers: { 'tus-resumable': '1.0.0', authorization: `Bearer ${token}` },
      });
      expect(head.headers.get('polyvision-copies')).toBe('1/2');
      expect(head.headers.get('x-content-sha256')).toBeNull();

      seB.child.kill('SIGCONT');
      frozen = false;
      await uploader.drain(AbortSignal.timeout(60_000), { untilConfirmed: true, recheckIntervalMs: 300 });
      expect(['confirmed', 'deleted']).toContain(spool.journal.get(row.id)?.state);
      const after = await fetch(uploaded?.uploadUrl ?? '', {
        method: 'HEAD',
        headers: { 'tus-resumable': '1.0.0', authorization: `Bearer ${token}` },
      });
      expect(after.headers.get('polyvision-copies')).toBe('2/2');
      expect(after.headers.get('x-content-sha256')).toBe(row.sha256);
    } finally {
      spool.close();
    }
  }, 120_000);

  it('reads Polyvision-Copies: short only when fewer copies are verified than required', () => {
    expect(copiesShort('1/2')).toBe(true);
    expect(copiesShort(' 2 / 2 ')).toBe(false);
    expect(copiesShort('3/2')).toBe(false);
    expect(copiesShort(undefined)).toBe(false);
    expect(copiesShort('garbage')).toBe(false);
  });
});
