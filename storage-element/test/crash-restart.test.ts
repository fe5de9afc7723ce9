/**
 * kill -9 of the SE process during a write, restart on the same data, and a
 * resumed upload whose sha256 matches: for both backends, on real processes.
 * Also: SIGTERM closes cleanly (exit 0) and reservations survive a restart.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/index.ts';
import { capacity, json, patchBytes, postJson, sha256Hex, testBytes } from './support/client.ts';
import { backendEnv, deleteBucket, ensureS3 } from './support/s3-server.ts';
import { removeDataDir, type SeProcess, startSe } from './support/se-process.ts';

const MiB = 1024 * 1024;

/** A 64 MiB SE on `backend`; each call its own S3 bucket. */
function crashBackendEnv(backend: 'local' | 's3'): Promise<Record<string, string>> {
  return backendEnv(backend, {
    capacityLimitBytes: 64 * MiB,
    bucket: `se-crash-${Date.now().toString(36)}-${Math.random().toString(16).slice(2, 8)}`,
  });
}

describe.each(['local', 's3'] as const)('crash and restart (%s backend)', (backend) => {
  const started: SeProcess[] = [];
  afterEach(async () => {
    for (const se of started.splice(0)) {
      await se.kill9();
      await removeDataDir(se.dataDir);
      const bucket = se.env.STORAGE_S3_BUCKET;
      if (bucket) await deleteBucket(await ensureS3(), bucket);
    }
  });

  it('resumes an upload after kill -9 mid-write; the published file has the right sha256', async () => {
    const env = await crashBackendEnv(backend);
    const first = await startSe(env);
    started.push(first);
    const bytes = testBytes(12 * MiB, 42);
    const created = await postJson(first, '/api/v1/uploads', {
      file_id: 'crash.bin',
      size_bytes: bytes.length,
      sha256: sha256Hex(bytes),
    });
    expect(created.status).toBe(201);
    const { upload_id, reservation_id } = await json<{ upload_id: string; reservation_id: string }>(created);

    // Stream 5 MiB, then hold the request open: the SE is mid-write when killed.
    let sent = 0;
    let release: (() => void) | undefined;
    const hold = new Promise<void>((r) => {
      release = r;
    });
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (sent >= 5 * MiB) {
          await hold;
          controller.close();
          return;
        }
        controller.enqueue(bytes.subarray(sent, sent + MiB / 4));
        sent += MiB / 4;
      },
    });
    const inFlight = first
      .fetch(`/api/v1/uploads/${upload_id}`, {
        method: 'PATCH',
        headers: { 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
        body,
        duplex: 'half',
      } as RequestInit)
      .then(
        (r) => r.status,
        () => 'failed',
      );
    const partPath = join(first.dataDir, 'staging', `${upload_id}.part`);
    await waitFor(async () => (await stat(partPath)).size >= 4 * MiB, {
      timeoutMs: 10_000,
      message: 'bytes staged before the kill',
    });
    await first.kill9();
    expect(first.child.signalCode).toBe('SIGKILL');
    release?.();
    expect(await inFlight).toBe('failed');

    const second = await startSe(env, first.dataDir);
    started.push(second);
    const state = await json<{ offset: number; size_bytes: number; reservation_id: string; state: string }>(
      await second.fetch(`/api/v1/uploads/${upload_id}`),
    );
    expect(state.state).toBe('open');
    expect(state.reservation_id).toBe(reservation_id);
    expect(state.offset).toBeGreaterThanOrEqual(4 * MiB);
    expect(state.offset).toBeLessThanOrEqual(5 * MiB);
    // The reservation survived and still holds the rest.
    const reservation = await json<{ written_bytes: number; size_bytes: number }>(
      await second.fetch(`/api/v1/reservations/${reservation_id}`),
    );
    expect(reservation.written_bytes).toBe(state.offset);
    expect((await capacity(second)).reserved).toBe(bytes.length - state.offset);
    expect((await second.fetch('/api/v1/files/crash.bin')).status).toBe(404);

    const resumed = await patchBytes(second, upload_id, state.offset, bytes.subarray(state.offset));
    expect(resumed.status).toBe(204);
    expect(resumed.headers.get('upload-offset')).toBe(String(bytes.length));
    const done = await postJson(second, `/api/v1/uploads/${upload_id}/complete`, {});
    expect(done.status).toBe(201);
    expect((await json<{ sha256: string }>(done)).sha256).toBe(sha256Hex(bytes));
    const read = await second.fetch('/api/v1/files/crash.bin');
    expect(sha256Hex(Buffer.from(await read.arrayBuffer()))).toBe(sha256Hex(bytes));
    const staged = (await readdir(join(second.dataDir, 'staging'))).filter((n) => n.endsWith('.part'));
    expect(staged).toEqual([]);
    expect((await capacity(second)).reserved).toBe(0);

    await second.stop();
    expect(second.child.exitCode).toBe(0);
  });

  it('keeps a free reservation across a SIGTERM restart, and drops it once expired', async () => {
    const env = await crashBackendEnv(backend);
    const first = await startSe(env);
    started.push(first);
    const long = await json<{ reservation_id: string }>(
      await postJson(first, '/api/v1/reservations', { size_bytes: 3 * MiB }),
    );
    const short = await json<{ reservation_id: string }>(
      await postJson(first, '/api/v1/reservations', { size_bytes: MiB, ttl_ms: 1_500 }),
    );
    await first.stop();
    expect(first.child.exitCode).toBe(0);
    await new Promise((r) => setTimeout(r, 1_600));
    const second = await startSe(env, first.dataDir);
    started.push(second);
    expect((await second.fetch(`/api/v1/reservations/${long.reservation_id}`)).status).toBe(200);
    expect((await second.fetch(`/api/v1/reservations/${short.reservation_id}`)).status).toBe(410);
    expect((await capacity(second)).reserved).toBe(3 * MiB);
  });
});
