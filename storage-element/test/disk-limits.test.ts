/**
 * The real edges of a disk, on a small tmpfs mounted for the test (needs
 * root and mount permission; skipped with a message otherwise): a write that
 * runs into a full disk (ENOSPC) answers 507 and leaves nothing behind; a
 * reservation larger than the disk is refused; a filesystem that turns
 * read-only makes the SE unhealthy and unready, and healthy again after.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/index.ts';
import { capacity, json, patchBytes, postJson, testBytes } from './support/client.ts';
import { type SeProcess, startSe } from './support/se-process.ts';

const MiB = 1024 * 1024;

function tryMountTmpfs(dir: string, sizeMiB: number): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const mountPoint = await mkdtemp(join(tmpdir(), 'se-tmpfs-'));
const mounted = tryMountTmpfs(mountPoint, 8);
if (!mounted) {
  process.stderr.write(`disk-limits.test.ts: cannot mount a tmpfs at ${mountPoint} (needs root); skipping\n`);
  await rmdir(mountPoint);
}

describe.skipIf(!mounted)('storage element on a small real filesystem (8 MiB tmpfs)', () => {
  let se: SeProcess;

  beforeAll(async () => {
    se = await startSe({ STORAGE_CAPACITY_PROBE_INTERVAL_MS: '0' }, join(mountPoint, 'se'));
  });
  afterAll(async () => {
    await se?.stop();
    execFileSync('umount', [mountPoint]);
    await rmdir(mountPoint);
  });

  it('refuses a reservation larger than the disk (507)', async () => {
    const report = await capacity(se);
    expect(report.total).toBe(8 * MiB);
    const r = await postJson(se, '/api/v1/reservations', { size_bytes: 9 * MiB });
    expect(r.status).toBe(507);
    expect(await json(r)).toMatchObject({ code: 'insufficient_storage', requested: 9 * MiB });
  });

  it('answers 507 when the disk runs full mid-write, discarding the request and keeping nothing visible', async () => {
    const created = await postJson(se, '/api/v1/uploads', { file_id: 'big.bin', size_bytes: 6 * MiB });
    expect(created.status).toBe(201);
    const { upload_id } = await json<{ upload_id: string }>(created);
    // Another tenant of the filesystem takes 5 MiB behind the SE's back.
    const filler = join(mountPoint, 'filler.bin');
    await writeFile(filler, testBytes(5 * MiB));
    const r = await patchBytes(se, upload_id, 0, testBytes(6 * MiB));
    expect(r.status).toBe(507);
    expect((await json(r)).code).toBe('insufficient_storage');
    const state = await json<{ offset: number }>(await se.fetch(`/api/v1/uploads/${upload_id}`));
    expect(state.offset).toBe(0);
    expect((await stat(join(se.dataDir, 'staging', `${upload_id}.part`))).size).toBe(0);
    expect((await se.fetch('/api/v1/files/big.bin')).status).toBe(404);
    expect(await readdir(join(se.dataDir, 'files'))).toEqual([]);
    const metrics = await (await se.fetch('/metrics')).text();
    expect(metrics).toMatch(/polyvision_se_insufficient_storage_total\{reason="append"[^}]*\} 1/);
    // Once the other tenant leaves, the same upload resumes and completes.
    await rm(filler);
    expect((await patchBytes(se, upload_id, 0, testBytes(6 * MiB))).status).toBe(204);
    expect((await postJson(se, `/api/v1/uploads/${upload_id}/complete`, {})).status).toBe(201);
    expect((await se.fetch('/api/v1/files/big.bin', { method: 'HEAD' })).headers.get('content-length')).toBe(
      String(6 * MiB),
    );
  });

  it('is unhealthy and unready on a read-only filesystem, healthy again when writable', async () => {
    execFileSync('mount', ['-o', 'remount,ro', mountPoint]);
    try {
      const report = await json<{ health: string; available: number }>(await se.fetch('/api/v1/capacity'));
      expect(report.health).toBe('unhealthy');
      expect(report.available).toBe(0);
      const ready = await se.fetch('/health/ready');
      expect(ready.status).toBe(503);
      expect(JSON.stringify(await ready.json())).toMatch(/read-only filesystem/);
      expect((await postJson(se, '/api/v1/reservations', { size_bytes: 1 })).status).toBe(507);
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', mountPoint]);
    }
    await waitFor(
      async () => (await json<{ health: string }>(await se.fetch('/api/v1/capacity'))).health === 'healthy',
      {
        timeoutMs: 5_000,
        message: 'healthy again',
      },
    );
    expect((await se.fetch('/health/ready')).status).toBe(200);
  });
});
