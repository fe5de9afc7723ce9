import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/index.ts';
import { Alarms } from '../src/alarms/index.ts';
import { Spool } from '../src/spool/index.ts';
import { parseRetryAfterMs, Uploader, type UploaderOptions } from '../src/upload/index.ts';
import { startTestIngest, type TestIngest } from './support/tus-server.ts';

let dir: string;
let ingest: TestIngest;
let spool: Spool;
let alarms: Alarms;
const TOKEN = 'edge-token-1';

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edge-upload-'));
  ingest = await startTestIngest({ dir: join(dir, 'ingest'), token: TOKEN });
  alarms = new Alarms();
  spool = await Spool.open({ dir: join(dir, 'spool'), alarms, minFreeBytes: 0 });
});
afterEach(async () => {
  spool.close();
  await ingest.stop();
  await rm(dir, { recursive: true, force: true });
});

async function addSegment(seq: number, sizeBytes: number, kind: 'camera' | 'panorama' = 'panorama') {
  const path = join(dir, `in-${seq}.mp4`);
  await writeFile(path, randomBytes(sizeBytes));
  return spool.add(path, { matchId: 'match-9', kind, source: kind === 'panorama' ? 'panorama' : 'camera-0', seq });
}

function uploader(extra: Partial<UploaderOptions> = {}): Uploader {
  return new Uploader({
    spool,
    alarms,
    ingestUrl: ingest.url,
    token: TOKEN,
    organizationId: 'org-1',
    chunkSizeBytes: 256 * 1024,
    baseDelayMs: 100,
    maxDelayMs: 500,
    ...extra,
  });
}

describe('uploader', () => {
  it('uploads every segment once with its metadata, and the spool deletes them after the sha256 matched', async () => {
    const rows = [await addSegment(1, 700_000), await addSegment(2, 10, 'camera'), await addSegment(3, 300_000)];
    const up = uploader();
    await up.drain(AbortSignal.timeout(20_000));
    const done = await ingest.completed();
    expect(done.map((d) => d.sha256).sort()).toEqual(rows.map((r) => r.sha256).sort());
    const meta = done.find((d) => d.sha256 === rows[0]?.sha256)?.metadata;
    expect(meta).toMatchObject({
      organization_id: 'org-1',
      match_id: 'match-9',
      kind: 'panorama',
      filename: rows[0]?.fileName,
    });
    for (const row of rows) {
      expect(spool.journal.get(row.id)?.state).toBe('deleted');
      await expect(stat(spool.pathOf(row))).rejects.toThrow();
    }
    expect(up.status().filesConfirmed).toBe(3);
    expect(up.status().bytesUploaded).toBe(1_000_010);
  });

  it('waits out 507 + Retry-After instead of retrying at once, then uploads', async () => {
    const row = await addSegment(1, 200_000);
    const refusedUntil = Date.now() + 2_500;
    ingest.refuseUntil(refusedUntil, 1);
    const up = uploader();
    const controller = new AbortController();
    const running = up.run(controller.signal);
    await waitFor(() => alarms.has('ingest_insufficient_storage'), { timeoutMs: 5_000 });
    await waitFor(() => spool.journal.get(row.id)?.state === 'deleted', { timeoutMs: 15_000 });
    controller.abort();
    await running;
    const refusals = ingest.log.filter((l) => l.status === 507);
    // Retry-After: 1 s over a 2.5 s refusal: about 3 tries, never a burst.
    expect(refusals.length).toBeGreaterThanOrEqual(2);
    expect(refusals.length).toBeLessThanOrEqual(4);
    for (let i = 1; i < refusals.length; i++) {
      expect((refusals[i]?.atMs ?? 0) - (refusals[i - 1]?.atMs ?? 0)).toBeGreaterThanOrEqual(900);
    }
    expect(up.status().insufficientStorageResponses).toBe(refusals.length);
    expect(alarms.has('ingest_insufficient_storage')).toBe(false);
  });

  it('resumes from the stored upload URL across an ingest restart and sends the file once, byte-identical', async () => {
    const row = await addSegment(1, 3 * 1024 * 1024);
    const up = uploader({ bandwidthBytesPerSecond: 1024 * 1024 });
    const controller = new AbortController();
    const running = up.run(controller.signal);
    await waitFor(() => (up.status().bytesUploaded ?? 0) > 600_000, { timeoutMs: 10_000 });
    await ingest.stop();
    const sentBefore = up.status().bytesUploaded;
    await waitFor(() => up.status().failures > 0, { timeoutMs: 10_000 });
    await ingest.start();
    await waitFor(() => spool.journal.get(row.id)?.state === 'deleted', { timeoutMs: 20_000 });
    controller.abort();
    await running;
    const done = await ingest.completed();
    expect(done).toHaveLength(1);
    expect(done[0]?.sha256).toBe(row.sha256);
    // Resumed, not restarted: one upload created, and the bytes sent stay close to the file size.
    expect(ingest.log.filter((l) => l.method === 'POST' && l.status === 201)).toHaveLength(1);
    expect(up.status().bytesUploaded).toBeLessThan(row.sizeBytes + 512 * 1024);
    expect(sentBefore).toBeLessThan(row.sizeBytes);
  });

  it('raises ingest_unauthorized for a wrong token and ingest_unreachable when nothing listens; nothing is deleted', async () => {
    const row = await addSegment(1, 1000);
    const bad = uploader({ token: 'wrong', unauthorizedRetryMs: 200 });
    const c1 = new AbortController();
    const r1 = bad.run(c1.signal);
    await waitFor(() => alarms.has('ingest_unauthorized'), { timeoutMs: 5_000 });
    c1.abort();
    await r1;
    await ingest.stop();
    const off = uploader();
    const c2 = new AbortController();
    const r2 = off.run(c2.signal);
    await waitFor(() => alarms.has('ingest_unreachable'), { timeoutMs: 10_000 });
    c2.abort();
    await r2;
    expect(spool.journal.get(row.id)?.state).toBe('pending');
    await stat(spool.pathOf(row));
  });

  it('keeps an upload the ingest did not confirm, and confirms it once a HEAD reports the sha256', async () => {
    const row = await addSegment(1, 5_000);
    ingest.hideConfirmation(true);
    const up = uploader({ recheckUnconfirmedMs: 200 });
    const controller = new AbortController();
    const running = up.run(controller.signal);
    await waitFor(() => spool.journal.get(row.id)?.state === 'unconfirmed', { timeoutMs: 10_000 });
    expect(alarms.has('upload_unconfirmed', row.fileName)).toBe(true);
    await stat(spool.pathOf(row));
    ingest.hideConfirmation(false);
    await waitFor(() => spool.journal.get(row.id)?.state === 'deleted', { timeoutMs: 10_000 });
    controller.abort();
    await running;
    expect(alarms.has('upload_unconfirmed')).toBe(false);
  });

  it('keeps to the bandwidth cap', async () => {
    const row = await addSegment(1, 1536 * 1024);
    const started = performance.now();
    await uploader({ bandwidthBytesPerSecond: 512 * 1024 }).drain(AbortSignal.timeout(20_000));
    const elapsedS = (performance.now() - started) / 1000;
    expect(spool.journal.get(row.id)?.state).toBe('deleted');
    // One second of burst (the bucket starts full), then 512 KiB/s: at least 2 s for 1.5 MiB.
    expect(elapsedS).toBeGreaterThan(1.8);
  });

  it('parses Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfterMs('3')).toBe(3000);
    expect(parseRetryAfterMs(new Date(Date.now() + 5000).toUTCString())).toBeGreaterThan(3000);
    expect(parseRetryAfterMs('soon')).toBeNull();
    expect(parseRetryAfterMs(undefined)).toBeNull();
  });
});
