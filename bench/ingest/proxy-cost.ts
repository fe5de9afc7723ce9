/**
 * Benchmark 3 of issue 5: what the ingest proxy costs.
 *
 * Run: eval "$(pnpm -s polyvision services up)" && node bench/ingest/proxy-cost.ts
 *      [--size-mib 512] [--rss-size-mib 4096] [--rounds 4]
 *
 * One real SE process (local backend, `edit` mode so files can be deleted
 * between rounds) and one ingest replica as a child process
 * (`node core/src/ingest/main.ts`, so its RSS is its own). The client
 * streams a body (a 1 MiB random block repeated; never held whole) in ONE
 * request, alternating per round:
 * - direct: SE `POST /api/v1/uploads` + one `PATCH` + `complete` (the
 *   baseline, measured in the same run);
 * - through ingest: tus `POST` + one `PATCH` (ingest reserves, streams to
 *   the SE, completes and records the catalog row).
 * Then `rss-size-mib` through ingest while sampling the ingest process's
 * VmRSS every 100 ms.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { createDatabase } from '../../core/src/db/index.ts';
import { createEdgeToken } from '../../core/src/ingest/index.ts';
import { formatTusMetadata } from '../../shared/src/index.ts';
import { benchSchema, killOnExit, MiB, rssBytes, SE_TOKEN, startBenchSe } from './support.ts';

const { values } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '512' },
    'rss-size-mib': { type: 'string', default: '4096' },
    rounds: { type: 'string', default: '4' },
  },
});
const SIZE = Number(values['size-mib']) * MiB;
const RSS_SIZE = Number(values['rss-size-mib']) * MiB;
const ROUNDS = Number(values.rounds);
if (!process.env.REDIS_URL || !process.env.DATABASE_URL) {
  process.stderr.write('REDIS_URL and DATABASE_URL must be set: eval "$(pnpm -s polyvision services up)"\n');
  process.exit(2);
}

const block = randomBytes(MiB);
function shaOf(size: number): string {
  const hash = createHash('sha256');
  for (let sent = 0; sent < size; sent += MiB) hash.update(block.subarray(0, Math.min(MiB, size - sent)));
  return hash.digest('hex');
}
function body(size: number): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= size) {
        controller.close();
        return;
      }
      const n = Math.min(MiB, size - sent);
      controller.enqueue(new Uint8Array(block.buffer, block.byteOffset, n).slice());
      sent += n;
    },
  });
}

const se = await startBenchSe('se-proxy', 'dc1', { STORAGE_MODE: 'edit' });
const seAuth = { authorization: `Bearer ${SE_TOKEN}` };
const { schema, drop } = await benchSchema('proxy');
const ingestChild = spawn(process.execPath, [new URL('../../core/src/ingest/main.ts', import.meta.url).pathname], {
  env: {
    PATH: process.env.PATH ?? '',
    LOG_LEVEL: 'warn',
    REDIS_URL: process.env.REDIS_URL,
    DATABASE_URL: process.env.DATABASE_URL,
    DATABASE_SCHEMA: schema,
    REDIS_KEY_PREFIX: `bench:proxy:${randomBytes(4).toString('hex')}:`,
    INGEST_PORT: '0',
    INGEST_INSTANCE_ID: 'bench-proxy',
    CAPACITY_MONITOR_BASE_INTERVAL: '1',
    STORAGE_ELEMENTS: JSON.stringify([{ storage_id: se.id, endpoint: se.url, token: SE_TOKEN, location: 'dc1' }]),
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
killOnExit(ingestChild);
const ingestUrl = await new Promise<string>((resolve, reject) => {
  let out = '';
  ingestChild.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    const line = out.split('\n').find((l) => l.includes('"listening"'));
    if (line) resolve((JSON.parse(line) as { url: string }).url);
  });
  ingestChild.once('exit', (code) => reject(new Error(`ingest exited with ${code}`)));
});
for (let i = 0; i < 100; i++) {
  if ((await fetch(`${ingestUrl}/health/ready`)).status === 200) break;
  await new Promise((r) => setTimeout(r, 100));
}
const db = createDatabase({ databaseUrl: process.env.DATABASE_URL, schema });
const { token } = await createEdgeToken(db, 'bench');
await db.close();
const tusHeaders = { 'tus-resumable': '1.0.0', authorization: `Bearer ${token}` };

async function direct(size: number, sha256: string, fileId: string): Promise<number> {
  const started = performance.now();
  const created = await fetch(`${se.url}/api/v1/uploads`, {
    method: 'POST',
    headers: { ...seAuth, 'content-type': 'application/json' },
    body: JSON.stringify({ file_id: fileId, size_bytes: size, sha256 }),
  });
  const { upload_id } = (await created.json()) as { upload_id: string };
  const patched = await fetch(`${se.url}/api/v1/uploads/${upload_id}`, {
    method: 'PATCH',
    headers: { ...seAuth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body: body(size),
    duplex: 'half',
  } as RequestInit);
  if (patched.status !== 204) throw new Error(`direct PATCH ${patched.status} ${await patched.text()}`);
  const completed = await fetch(`${se.url}/api/v1/uploads/${upload_id}/complete`, {
    method: 'POST',
    headers: { ...seAuth, 'content-type': 'application/json' },
    body: '{}',
  });
  if (completed.status !== 201) throw new Error(`direct complete ${completed.status}`);
  const seconds = (performance.now() - started) / 1000;
  await fetch(`${se.url}/api/v1/files/${fileId}`, { method: 'DELETE', headers: seAuth });
  return size / MiB / seconds;
}

async function throughIngest(size: number, sha256: string, match: string): Promise<number> {
  const started = performance.now();
  const created = await fetch(`${ingestUrl}/api/v1/uploads`, {
    method: 'POST',
    headers: {
      ...tusHeaders,
      'upload-length': String(size),
      'upload-metadata': formatTusMetadata({
        organization_id: 'bench',
        match_id: match,
        kind: 'camera',
        filename: 'f.bin',
        sha256,
      }),
    },
  });
  if (created.status !== 201) throw new Error(`tus create ${created.status} ${await created.text()}`);
  const path = new URL(created.headers.get('location') ?? '', ingestUrl).pathname;
  const patched = await fetch(`${ingestUrl}${path}`, {
    method: 'PATCH',
    headers: { ...tusHeaders, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    body: body(size),
    duplex: 'half',
  } as RequestInit);
  if (patched.status !== 204) throw new Error(`tus PATCH ${patched.status} ${await patched.text()}`);
  const seconds = (performance.now() - started) / 1000;
  await fetch(`${se.url}/api/v1/files/f-${path.split('/').pop()}`, { method: 'DELETE', headers: seAuth });
  return size / MiB / seconds;
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 1/100 s). */
async function cpuSeconds(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const sha = shaOf(SIZE);
const rounds: Array<{ direct_mib_s: number; ingest_mib_s: number; ratio: number; ingest_cpu_s_per_gib: number }> = [];
for (let i = 0; i < ROUNDS; i++) {
  const d = await direct(SIZE, sha, `direct-${i}`);
  const cpuBefore = await cpuSeconds(ingestChild.pid as number);
  const t = await throughIngest(SIZE, sha, `m-${i}`);
  const cpu = (await cpuSeconds(ingestChild.pid as number)) - cpuBefore;
  rounds.push({
    direct_mib_s: Math.round(d),
    ingest_mib_s: Math.round(t),
    ratio: Math.round((t / d) * 100) / 100,
    ingest_cpu_s_per_gib: Math.round((cpu / (SIZE / 2 ** 30)) * 100) / 100,
  });
  process.stderr.write(`round ${i}: ${JSON.stringify(rounds[i])}\n`);
}

const rssBefore = await rssBytes(ingestChild.pid as number);
const samples: number[] = [];
let sampling = true;
const sampler = (async () => {
  while (sampling) {
    samples.push(await rssBytes(ingestChild.pid as number));
    await new Promise((r) => setTimeout(r, 100));
  }
})();
const rssSha = shaOf(RSS_SIZE);
const rssThroughput = await throughIngest(RSS_SIZE, rssSha, 'm-rss');
sampling = false;
await sampler;

ingestChild.kill('SIGTERM');
await new Promise((r) => ingestChild.once('exit', r));
await se.stop();
await drop();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const result = {
  benchmark: 'ingest-proxy-cost',
  measured_at: new Date().toISOString(),
  host: { cpus: cpus().length },
  parameters: { size_bytes: SIZE, rss_size_bytes: RSS_SIZE, rounds: ROUNDS },
  rounds,
  best_ratio: Math.max(...rounds.map((r) => r.ratio)),
  median_ratio: median(rounds.map((r) => r.ratio)),
  /** Sum of ingest MiB/s over sum of direct MiB/s: the ratio of the rounds' mean throughputs. */
  mean_throughput_ratio:
    Math.round(
      (rounds.reduce((s, r) => s + r.ingest_mib_s, 0) / rounds.reduce((s, r) => s + r.direct_mib_s, 0)) * 100,
    ) / 100,
  rss: {
    before_mib: Math.round(rssBefore / MiB),
    min_mib: Math.round(Math.min(...samples) / MiB),
    max_mib: Math.round(Math.max(...samples) / MiB),
    samples: samples.length,
    throughput_mib_s: Math.round(rssThroughput),
  },
};
mkdirSync(new URL('../results/', import.meta.url), { recursive: true });
writeFileSync(new URL('../results/ingest-proxy-cost.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
process.exit(0);
