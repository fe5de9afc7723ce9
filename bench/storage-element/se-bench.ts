/**
 * Storage element benchmark (issue 3):
 * 1. 1 GiB upload and download through a real SE process (local backend, over
 *    loopback HTTP) against the same disk's own sequential write (+fsync) and
 *    read, measured in the same run (ratios; the host is noisy).
 * 2. SE resident memory (VmRSS, sampled every 100 ms) while streaming a 4 GiB
 *    file in and out: it must stay flat.
 * 3. `GET /api/v1/capacity` latency p50/p99 with 200 concurrent pollers,
 *    with and without `If-None-Match`.
 *
 * Run: `node bench/storage-element/se-bench.ts [--size-mib 1024] [--rss-size-mib 4096] [--pollers 200] [--polls 25]`
 * Writes bench/results/se-bench.json. Data lives in a temp folder, removed at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const MiB = 1024 * 1024;
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const TOKEN = 'bench-token';

const { values } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '1024' },
    'rss-size-mib': { type: 'string', default: '4096' },
    pollers: { type: 'string', default: '200' },
    polls: { type: 'string', default: '25' },
  },
});
const sizeBytes = Number(values['size-mib']) * MiB;
const rssSizeBytes = Number(values['rss-size-mib']) * MiB;
const pollers = Number(values.pollers);
const pollsEach = Number(values.polls);

/** 1 MiB of pseudo-random bytes, repeated to make a stream of any size. */
const block = Buffer.alloc(MiB);
for (let i = 0; i < block.length; i++) block[i] = (i * 2654435761) >>> 24;

function* blocks(total: number): Generator<Buffer> {
  for (let sent = 0; sent < total; sent += MiB) yield total - sent >= MiB ? block : block.subarray(0, total - sent);
}

function mibPerS(bytes: number, ms: number): number {
  return Math.round((bytes / MiB / (ms / 1000)) * 10) / 10;
}

async function diskWrite(path: string, total: number): Promise<number> {
  const start = performance.now();
  const handle = await open(path, 'w');
  let position = 0;
  for (const b of blocks(total)) {
    await handle.write(b, 0, b.length, position);
    position += b.length;
  }
  await handle.sync();
  await handle.close();
  return performance.now() - start;
}

async function diskRead(path: string): Promise<number> {
  const start = performance.now();
  let n = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: MiB })) n += (chunk as Buffer).length;
  if (n === 0) throw new Error('empty read');
  return performance.now() - start;
}

async function startSe(dataDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(repo, 'storage-element/src/main.ts')], {
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      STORAGE_ELEMENT_ID: 'se-bench',
      STORAGE_DATACENTER_LOCATION: 'bench',
      STORAGE_DATA_DIR: dataDir,
      STORAGE_PORT: '0',
      STORAGE_TOKENS: TOKEN,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolveUrl((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`SE exited ${code}`)));
  });
  return { url, child };
}

async function api(url: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.status === 204 ? {} : ((await r.json()) as Record<string, unknown>);
}

/** Streams `total` bytes in one PATCH (Content-Length set), with backpressure. */
function patchStream(url: string, uploadId: string, total: number): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolveStatus, reject) => {
    const req = request(
      {
        host: hostname,
        port,
        method: 'PATCH',
        path: `/api/v1/uploads/${uploadId}`,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
          'content-length': String(total),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolveStatus(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    const gen = blocks(total);
    const pump = () => {
      for (;;) {
        const next = gen.next();
        if (next.done) {
          req.end();
          return;
        }
        if (!req.write(next.value)) {
          req.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

async function uploadThroughSe(url: string, fileId: string, total: number): Promise<number> {
  const start = performance.now();
  const upload = await api(url, 'POST', '/api/v1/uploads', { file_id: fileId, size_bytes: total });
  const status = await patchStream(url, String(upload.upload_id), total);
  if (status !== 204) throw new Error(`PATCH answered ${status}`);
  await api(url, 'POST', `/api/v1/uploads/${String(upload.upload_id)}/complete`, {});
  return performance.now() - start;
}

async function downloadThroughSe(url: string, fileId: string): Promise<number> {
  const start = performance.now();
  const r = await fetch(`${url}/api/v1/files/${fileId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  let n = 0;
  for await (const chunk of r.body as AsyncIterable<Uint8Array>) n += chunk.byteLength;
  if (n === 0) throw new Error('empty download');
  return performance.now() - start;
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (clock ticks of 1/100 s). */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function rssKiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

async function sampleRss<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; samplesMiB: number[] }> {
  const samples: number[] = [];
  const timer = setInterval(() => {
    rssKiB(pid).then(
      (k) => samples.push(Math.round((k / 1024) * 10) / 10),
      () => {},
    );
  }, 100);
  try {
    const result = await work();
    return { result, samplesMiB: samples };
  } finally {
    clearInterval(timer);
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function pollCapacity(
  url: string,
  conditional: boolean,
): Promise<{ p50Ms: number; p99Ms: number; notModified: number; requests: number; wallMs: number }> {
  const latencies: number[] = [];
  let notModified = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: pollers }, async () => {
      // Each poller keeps the ETag of its last 200, as the capacity monitor does.
      let etag = '';
      for (let i = 0; i < pollsEach; i++) {
        const t = performance.now();
        const r = await fetch(`${url}/api/v1/capacity`, {
          headers: { authorization: `Bearer ${TOKEN}`, ...(conditional && etag ? { 'if-none-match': etag } : {}) },
        });
        await r.arrayBuffer();
        if (r.status === 200) etag = r.headers.get('etag') ?? '';
        latencies.push(performance.now() - t);
        if (r.status === 304) notModified += 1;
      }
    }),
  );
  const wallMs = performance.now() - start;
  latencies.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    notModified,
    requests: latencies.length,
    wallMs: Math.round(wallMs),
  };
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'se-bench-'));
  const dataDir = join(work, 'se');
  await mkdir(dataDir);
  const { url, child } = await startSe(dataDir);
  const pid = child.pid as number;
  try {
    // 1. Throughput: disk baseline and SE, alternating, same file size.
    const diskFile = join(work, 'baseline.bin');
    const diskWriteMs = await diskWrite(diskFile, sizeBytes);
    const cpu0 = await cpuSeconds(pid);
    const seUploadMs = await uploadThroughSe(url, 'bench-1g.bin', sizeBytes);
    const cpu1 = await cpuSeconds(pid);
    const diskReadMs = await diskRead(diskFile);
    const cpu2 = await cpuSeconds(pid);
    const seDownloadMs = await downloadThroughSe(url, 'bench-1g.bin');
    const cpu3 = await cpuSeconds(pid);
    const gib = sizeBytes / (1024 * MiB);
    await rm(diskFile);
    const throughput = {
      sizeBytes,
      diskWriteMiBps: mibPerS(sizeBytes, diskWriteMs),
      seUploadMiBps: mibPerS(sizeBytes, seUploadMs),
      uploadRatio: Math.round((diskWriteMs / seUploadMs) * 100) / 100,
      diskReadMiBps: mibPerS(sizeBytes, diskReadMs),
      seDownloadMiBps: mibPerS(sizeBytes, seDownloadMs),
      downloadRatio: Math.round((diskReadMs / seDownloadMs) * 100) / 100,
      seUploadCpuSecondsPerGiB: Math.round(((cpu1 - cpu0) / gib) * 100) / 100,
      seDownloadCpuSecondsPerGiB: Math.round(((cpu3 - cpu2) / gib) * 100) / 100,
    };
    process.stderr.write(`throughput ${JSON.stringify(throughput)}\n`);

    // 2. RSS while streaming a large file in and out.
    const rssBeforeMiB = Math.round(((await rssKiB(pid)) / 1024) * 10) / 10;
    const up = await sampleRss(pid, () => uploadThroughSe(url, 'bench-rss.bin', rssSizeBytes));
    const down = await sampleRss(pid, () => downloadThroughSe(url, 'bench-rss.bin'));
    const stats = (s: number[]) => ({
      samples: s.length,
      minMiB: Math.min(...s),
      maxMiB: Math.max(...s),
      firstMiB: s[0],
      lastMiB: s[s.length - 1],
    });
    const rss = {
      sizeBytes: rssSizeBytes,
      rssBeforeMiB,
      upload: { ...stats(up.samplesMiB), MiBps: mibPerS(rssSizeBytes, up.result) },
      download: { ...stats(down.samplesMiB), MiBps: mibPerS(rssSizeBytes, down.result) },
    };
    process.stderr.write(`rss ${JSON.stringify(rss)}\n`);

    // 3. Capacity polling.
    const plain = await pollCapacity(url, false);
    const conditional = await pollCapacity(url, true);
    const capacity = { pollers, pollsEach, plain, conditional };
    process.stderr.write(`capacity ${JSON.stringify(capacity)}\n`);

    const result = {
      bench: 'storage-element',
      date: new Date().toISOString(),
      node: process.version,
      host: { cpus: (await import('node:os')).cpus().length },
      throughput,
      rss,
      capacity,
    };
    await mkdir(join(repo, 'bench', 'results'), { recursive: true });
    await writeFile(join(repo, 'bench', 'results', 'se-bench.json'), `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await rm(work, { recursive: true, force: true });
  }
}

await main();
