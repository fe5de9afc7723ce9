/**
 * Upload throughput of the edge uploader (tus-js-client, 8 MiB chunks by default,
 * journal updates, sha256 confirmation) into a real tus server on loopback
 * (@tus/server + file store, the stand-in the edge tests use), with and
 * without an interruption (ingest stopped and started again at half way,
 * the upload resumed from its stored URL), against a single plain HTTP PUT
 * of the same file into a file on the same disk, measured in the same run.
 *
 * Usage: node bench/edge/upload-throughput.ts [--size-mib 64] [--runs 2] [--chunk-mib 8]
 * Writes bench/results/edge-upload-throughput.json.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { Alarms, Spool, Uploader } from '../../edge/src/index.ts';
import { startTestIngest } from '../../edge/test/support/tus-server.ts';

const { values } = parseArgs({
  options: { 'size-mib': { type: 'string' }, runs: { type: 'string' }, 'chunk-mib': { type: 'string' } },
});
const chunkMib = Number(values['chunk-mib'] ?? 8);
const sizeBytes = Number(values['size-mib'] ?? 64) * 1024 * 1024;
const runs = Number(values.runs ?? 2);
const TOKEN = 'bench';
const work = await mkdtemp(join(tmpdir(), 'bench-edge-upload-'));
const mib = (b: number) => b / 1048576;

async function plainPut(source: string): Promise<number> {
  const target = join(work, 'put-target.bin');
  const server = createServer((req, res) => {
    pipeline(req, createWriteStream(target)).then(
      () => res.writeHead(201).end(),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const started = performance.now();
  await new Promise<void>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'PUT', path: '/file', headers: { 'content-length': sizeBytes } },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 201 ? resolve() : reject(new Error(`PUT ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    createReadStream(source).pipe(req);
  });
  const s = (performance.now() - started) / 1000;
  await new Promise((r) => server.close(r));
  await rm(target, { force: true });
  return s;
}

async function tusRun(
  source: string,
  run: number,
  interrupt: boolean,
): Promise<{ s: number; sentBytes: number; posts: number }> {
  const ingest = await startTestIngest({ dir: join(work, `ingest-${run}-${interrupt}`), token: TOKEN });
  await mkdir(join(work, `ingest-${run}-${interrupt}`), { recursive: true });
  const spool = await Spool.open({
    dir: join(work, `spool-${run}-${interrupt}`),
    alarms: new Alarms(),
    minFreeBytes: 0,
  });
  // The spool moves the file in; give it a copy (hard link cost is not part of the upload).
  const copy = join(work, `copy-${run}-${interrupt}.bin`);
  await pipeline(createReadStream(source), createWriteStream(copy));
  const row = await spool.add(copy, { matchId: 'bench', kind: 'panorama', source: 'panorama', seq: run });
  let sentBytes = 0;
  const uploader = new Uploader({
    onProgress: (_row, sent) => {
      sentBytes = sent;
    },
    spool,
    alarms: new Alarms(),
    ingestUrl: ingest.url,
    token: TOKEN,
    organizationId: 'bench',
    chunkSizeBytes: chunkMib * 1024 * 1024,
    baseDelayMs: 50,
    maxDelayMs: 200,
  });
  const controller = new AbortController();
  const started = performance.now();
  const loop = uploader.run(controller.signal);
  if (interrupt) {
    while (sentBytes < sizeBytes / 2) await new Promise((r) => setTimeout(r, 2));
    await ingest.stop();
    while (uploader.status().failures === 0 && spool.journal.get(row.id)?.state !== 'deleted') {
      await new Promise((r) => setTimeout(r, 5));
    }
    await ingest.start();
  }
  while (spool.journal.get(row.id)?.state !== 'deleted') await new Promise((r) => setTimeout(r, 5));
  const s = (performance.now() - started) / 1000;
  controller.abort();
  await loop;
  spool.close();
  const posts = ingest.log.filter((l) => l.method === 'POST' && l.status === 201).length;
  await ingest.stop();
  return { s, sentBytes: uploader.status().bytesUploaded, posts };
}

try {
  const source = join(work, 'source.bin');
  await writeFile(source, randomBytes(sizeBytes));
  const results: Record<string, unknown>[] = [];
  for (let run = 0; run < runs; run++) {
    const put = await plainPut(source);
    const tus = await tusRun(source, run, false);
    const resumed = await tusRun(source, run, true);
    const row = {
      run,
      size_mib: mib(sizeBytes),
      plain_put_mib_s: Number((mib(sizeBytes) / put).toFixed(1)),
      tus_mib_s: Number((mib(sizeBytes) / tus.s).toFixed(1)),
      tus_interrupted_resumed_mib_s: Number((mib(sizeBytes) / resumed.s).toFixed(1)),
      tus_resumed_bytes_sent_mib: Number(mib(resumed.sentBytes).toFixed(1)),
      tus_resumed_uploads_created: resumed.posts,
      ratio_tus_vs_put: Number((put / tus.s).toFixed(2)),
      ratio_resumed_vs_put: Number((put / resumed.s).toFixed(2)),
    };
    results.push(row);
    process.stdout.write(`${JSON.stringify(row)}\n`);
  }
  await writeFile(
    join(import.meta.dirname, '../results/edge-upload-throughput.json'),
    `${JSON.stringify({ measured_at: new Date().toISOString(), chunk_size_mib: chunkMib, results }, null, 2)}\n`,
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
