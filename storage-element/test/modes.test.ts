/**
 * Modes on real processes: `ro` and `ar` refuse writes (403 read_only_mode)
 * but serve reads; deletes only in `edit`. One data folder is written in `rw`,
 * then reopened in each mode.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, patchBytes, postJson, sha256Hex, testBytes, uploadFile } from './support/client.ts';
import { removeDataDir, type SeProcess, startSe } from './support/se-process.ts';

describe('storage element modes (local backend)', () => {
  let dataDir: string;
  let openUploadId: string;
  const bytes = testBytes(50_000, 5);

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'se-modes-'));
    const rw = await startSe({ STORAGE_MODE: 'rw' }, dataDir);
    try {
      expect((await uploadFile(rw, 'kept.bin', bytes)).complete.status).toBe(201);
      const created = await json<{ upload_id: string }>(await postJson(rw, '/api/v1/uploads', { size_bytes: 10 }));
      openUploadId = created.upload_id;
    } finally {
      await rw.stop();
    }
  });
  afterAll(async () => {
    await removeDataDir(dataDir);
  });

  async function withMode(mode: string, body: (se: SeProcess) => Promise<void>): Promise<void> {
    const se = await startSe({ STORAGE_MODE: mode }, dataDir);
    try {
      await body(se);
    } finally {
      await se.stop();
    }
  }

  for (const mode of ['ro', 'ar'] as const) {
    it(`${mode}: refuses reservations, uploads, appends and deletes; serves reads`, async () => {
      await withMode(mode, async (se) => {
        const report = await json<{ mode: string }>(await se.fetch('/api/v1/capacity'));
        expect(report.mode).toBe(mode);
        for (const r of [
          await postJson(se, '/api/v1/reservations', { size_bytes: 10 }),
          await postJson(se, '/api/v1/uploads', { size_bytes: 10 }),
          await patchBytes(se, openUploadId, 0, testBytes(10)),
        ]) {
          expect(r.status).toBe(403);
          expect(await json(r)).toMatchObject({ code: 'read_only_mode', mode });
        }
        const del = await se.fetch('/api/v1/files/kept.bin', { method: 'DELETE' });
        expect(del.status).toBe(403);
        expect((await json(del)).code).toBe('delete_not_allowed');
        const read = await se.fetch('/api/v1/files/kept.bin');
        expect(read.status).toBe(200);
        expect(sha256Hex(Buffer.from(await read.arrayBuffer()))).toBe(sha256Hex(bytes));
      });
    });
  }

  it('edit: deletes a file (204, then 404) and frees its bytes', async () => {
    await withMode('edit', async (se) => {
      const before = await json<{ used: number }>(await se.fetch('/api/v1/capacity'));
      expect((await se.fetch('/api/v1/files/kept.bin', { method: 'DELETE' })).status).toBe(204);
      expect((await se.fetch('/api/v1/files/kept.bin')).status).toBe(404);
      expect((await se.fetch('/api/v1/files/kept.bin', { method: 'DELETE' })).status).toBe(404);
      expect((await se.fetch('/api/v1/files/kept.bin', { method: 'HEAD' })).status).toBe(404);
      const after = await json<{ used: number }>(await se.fetch('/api/v1/capacity'));
      expect(after.used).toBeLessThan(before.used);
    });
  });

  it('keeps STORAGE_RESERVED_BYTES of headroom out of what it offers', async () => {
    const se = await startSe({
      STORAGE_CAPACITY_LIMIT_BYTES: String(16 * 1024 * 1024),
      STORAGE_RESERVED_BYTES: String(4 * 1024 * 1024),
    });
    try {
      const report = await json<{ total: number; used: number; available: number }>(await se.fetch('/api/v1/capacity'));
      expect(report.total).toBe(16 * 1024 * 1024);
      expect(report.available).toBe(report.total - report.used - 4 * 1024 * 1024);
      const tooMuch = await postJson(se, '/api/v1/reservations', { size_bytes: report.available + 1 });
      expect(tooMuch.status).toBe(507);
      expect((await json<{ available: number }>(tooMuch)).available).toBe(report.available);
      expect((await postJson(se, '/api/v1/reservations', { size_bytes: report.available })).status).toBe(201);
    } finally {
      await se.stop();
      await removeDataDir(se.dataDir);
    }
  });

  it('refuses to start on bad configuration, naming the variable (exit 2)', async () => {
    await expect(startSe({ STORAGE_MODE: 'write-everything' })).rejects.toThrow(
      /exited with 2 before listening: configuration error: STORAGE_MODE/,
    );
    await expect(startSe({ STORAGE_TYPE: 's3' })).rejects.toThrow(/STORAGE_S3_/);
    await expect(startSe({ STORAGE_TOKENS: ' , ' })).rejects.toThrow(/STORAGE_TOKENS/);
  });
});
