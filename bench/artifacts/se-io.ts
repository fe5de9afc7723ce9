/**
 * What the workers' storage-element artifact store costs against bare HTTP
 * on the same SE, in the same run.
 *
 * Run: eval "$(pnpm -s polyvision services up)" && node bench/artifacts/se-io.ts [--size-mib 256] [--rounds 3]
 *
 * One real SE process (local backend, `edit` mode), the real PostgreSQL
 * (catalog in a throwaway schema). Per round, alternating:
 * - write, baseline: SE `POST /api/v1/uploads` + one streamed `PATCH` + `complete` (no hash on the client);
 * - write, `StorageElementArtifactIo.writeOutput`: sha256 of the local file, placement + reservation,
 *   upload, complete with sha256, catalog row (a new job id per round, so nothing is deduplicated);
 * - read, baseline: `GET /api/v1/files/:id` with the same undici client (`StorageElementClient.openFile`) piped to a file;
 * - read, `openInput`: the same GET through download.ts (sha256 on the way, size check, rename).
 * Writes `bench/results/artifacts-se-io.json`.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { createDatabase } from '../../core/src/db/index.ts';
import { StorageElementClient } from '../../core/src/ingest/se-client.ts';
import { createArtifactIo } from '../../core/src/workers/artifacts/index.ts';
import { benchSchema, MiB, SE_TOKEN, startBenchSe } from '../ingest/support.ts';

const { values } = parseArgs({
  options: { 'size-mib': { type: 'string', default: '256' }, rounds: { type: 'string', default: '3' } },
});
const SIZE = Number(values['size-mib']) * MiB;
const ROUNDS = Number(values.rounds);
if (!process.env.DATABASE_URL) {
  process.stderr.write('DATABASE_URL must be set: eval "$(pnpm -s polyvision services up)"\n');
  process.exit(2);
}

const dir = await mkdtemp(join(tmpdir(), 'bench-se-io-'));
const se = await startBenchSe('se-bench', 'dc1', { STORAGE_MODE: 'edit' });
const schema = await benchSchema('se_io');
const db = createDatabase({ databaseUrl: process.env.DATABASE_URL, schema: schema.schema });
const auth = { authorization: `Bearer ${SE_TOKEN}` };
const rows: Array<Record<string, number>> = [];
try {
  const source = join(dir, 'source.bin');
  const block = Buffer.alloc(MiB);
  for (let i = 0; i < MiB; i++) block[i] = (i * 2654435761) >>> 24;
  const handle = createWriteStream(source);
  for (let written = 0; written < SIZE; written += MiB) {
    if (!handle.write(block)) await new Promise<void>((r) => handle.once('drain', () => r()));
  }
  await new Promise<void>((r) => handle.end(() => r()));
  const io = createArtifactIo({
    env: {
      STORAGE_ELEMENTS: JSON.stringify([{ storage_id: se.id, endpoint: se.url, token: SE_TOKEN, location: 'dc1' }]),
    },
    db,
  });
  const client = new StorageElementClient();
  const seConfig = { storage_id: se.id, endpoint: se.url, token: SE_TOKEN, location: 'dc1' };
  const mibPerS = (ms: number) => Math.round((SIZE / MiB / (ms / 1000)) * 10) / 10;
  for (let round = 1; round <= ROUNDS; round++) {
    // Write, baseline.
    let t = performance.now();
    const created = await fetch(`${se.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ file_id: `bare-${round}`, size_bytes: SIZE }),
    });
    const { upload_id } = (await created.json()) as { upload_id: string };
    const patched = await fetch(`${se.url}/api/v1/uploads/${upload_id}`, {
      method: 'PATCH',
      headers: { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
      body: Readable.toWeb(createReadStream(source)) as unknown as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
    if (patched.status !== 204) throw new Error(`bare PATCH: ${patched.status}`);
    await fetch(`${se.url}/api/v1/uploads/${upload_id}/complete`, { method: 'POST', headers: auth });
    const writeBareMs = performance.now() - t;
    // Write through the artifact store.
    t = performance.now();
    const ref = await io.writeOutput({
      kind: 'bench',
      objectKey: `bench/m-1/detect/v1/out-${round}.bin`,
      localPath: source,
      task: { job_id: `job-${round}`, stage: 'detect', organization_id: 'bench', match_id: 'm-1', model_version: 'v1' },
    });
    const writeIoMs = performance.now() - t;
    // Read, baseline.
    t = performance.now();
    const opened = await client.openFile(seConfig, `bare-${round}`);
    await pipeline(opened.body, createWriteStream(join(dir, 'bare.bin')));
    const readBareMs = performance.now() - t;
    // Read through the artifact store.
    const work = join(dir, `work-${round}`);
    await mkdir(work);
    t = performance.now();
    await io.openInput(ref, work);
    const readIoMs = performance.now() - t;
    await rm(work, { recursive: true, force: true });
    await rm(join(dir, 'bare.bin'), { force: true });
    await fetch(`${se.url}/api/v1/files/bare-${round}`, { method: 'DELETE', headers: auth });
    await fetch(`${se.url}/api/v1/files/${ref.object_key}`, { method: 'DELETE', headers: auth });
    const row = {
      round,
      write_bare_mib_s: mibPerS(writeBareMs),
      write_io_mib_s: mibPerS(writeIoMs),
      write_ratio: Math.round((writeBareMs / writeIoMs) * 100) / 100,
      read_bare_mib_s: mibPerS(readBareMs),
      read_io_mib_s: mibPerS(readIoMs),
      read_ratio: Math.round((readBareMs / readIoMs) * 100) / 100,
    };
    rows.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  }
  const median = (key: string) => {
    const xs = rows.map((r) => r[key] as number).sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)] as number;
  };
  const result = {
    measured_at: new Date().toISOString(),
    size_mib: SIZE / MiB,
    rounds: rows,
    median_write_ratio: median('write_ratio'),
    median_read_ratio: median('read_ratio'),
  };
  await mkdir(new URL('../results/', import.meta.url), { recursive: true });
  await writeFile(new URL('../results/artifacts-se-io.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(
    `median ratio (bare / artifact store): write ${result.median_write_ratio}, read ${result.median_read_ratio}\n`,
  );
} finally {
  await db.close();
  await schema.drop();
  await se.stop();
  await rm(dir, { recursive: true, force: true });
}
