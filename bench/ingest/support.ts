/**
 * Shared pieces of the ingest benchmarks: real storage-element processes,
 * in-process ingest replicas on the real Redis and PostgreSQL, and a small
 * tus client on fetch.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, migrate } from '../../core/src/db/index.ts';
import { createEdgeToken, loadIngestSettings, type RunningIngest, startIngest } from '../../core/src/ingest/index.ts';
import { formatTusMetadata } from '../../shared/src/index.ts';

const SE_MAIN = new URL('../../storage-element/src/main.ts', import.meta.url).pathname;
export const SE_TOKEN = 'bench-se-token';
export const MiB = 2 ** 20;

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** Makes sure `child` dies with this process, even when the benchmark throws. */
export function killOnExit(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

export interface BenchSe {
  id: string;
  url: string;
  location: string;
  child: ChildProcess;
  dataDir: string;
  capacity(): Promise<{ total: number; used: number; available: number; reserved: number }>;
  stop(): Promise<void>;
}

/** Starts `node storage-element/src/main.ts` on a free port with a fresh data dir. */
export async function startBenchSe(id: string, location: string, env: Record<string, string> = {}): Promise<BenchSe> {
  const dataDir = await mkdtemp(join(tmpdir(), `bench-${id}-`));
  const child = spawn(process.execPath, [SE_MAIN], {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'warn',
      STORAGE_ELEMENT_ID: id,
      STORAGE_DATACENTER_LOCATION: location,
      STORAGE_DATA_DIR: dataDir,
      STORAGE_PORT: '0',
      STORAGE_TOKENS: SE_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  killOnExit(child);
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const line = out.split('\n').find((l) => l.includes('"listening"'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.once('exit', (code) => reject(new Error(`SE ${id} exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    id,
    url,
    location,
    child,
    dataDir,
    async capacity() {
      const r = await fetch(`${url}/api/v1/capacity`, { headers: { authorization: `Bearer ${SE_TOKEN}` } });
      return (await r.json()) as { total: number; used: number; available: number; reserved: number };
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** One ingest replica in this process over `ses`, plus a token for organization `bench`. */
/** `METRICS_TOKENS` of the bench's ingest replicas (`/metrics` needs a bearer token). */
export const BENCH_METRICS_TOKEN = 'bench-metrics-token-0123456789';

export async function startBenchIngest(
  ses: BenchSe[],
  env: Record<string, string>,
): Promise<{ ingest: RunningIngest; token: string }> {
  const ingest = await startIngest(
    loadIngestSettings({
      REDIS_URL: process.env.REDIS_URL,
      DATABASE_URL: process.env.DATABASE_URL,
      INGEST_PORT: '0',
      METRICS_TOKENS: BENCH_METRICS_TOKEN,
      STORAGE_ELEMENTS: JSON.stringify(
        ses.map((se) => ({ storage_id: se.id, endpoint: se.url, token: SE_TOKEN, location: se.location })),
      ),
      ...env,
    }),
  );
  const { token } = await createEdgeToken(ingest.db, 'bench');
  return { ingest, token };
}

/** Creates the schema (migrated) and returns a function that drops it. */
export async function benchSchema(name: string): Promise<{ schema: string; drop(): Promise<void> }> {
  const schema = `bench_${name}_${randomBytes(4).toString('hex')}`;
  const db = createDatabase({ databaseUrl: process.env.DATABASE_URL, schema });
  await migrate(db);
  return {
    schema,
    async drop() {
      await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await db.close();
    },
  };
}

/** What one tus upload did. */
export interface UploadResult {
  status: 'completed' | 'refused' | 'failed';
  /** Answer of the creation (507 when refused). */
  createStatus: number;
  /** Bytes sent in PATCH bodies (more than the size when an upload was relocated and re-sent). */
  sentBytes: number;
  body?: unknown;
}

/**
 * Uploads `bytes` through tus: POST, then PATCH of `chunkBytes` pieces; on a
 * 503 (`upload_relocated`) asks HEAD for the offset and goes on from there.
 */
export async function tusUpload(
  baseUrl: string,
  token: string,
  bytes: Buffer,
  meta: { match_id: string; kind?: string },
  chunkBytes = 64 * MiB,
): Promise<UploadResult> {
  const headers = { 'tus-resumable': '1.0.0', authorization: `Bearer ${token}` };
  const created = await fetch(`${baseUrl}/api/v1/uploads`, {
    method: 'POST',
    headers: {
      ...headers,
      'upload-length': String(bytes.length),
      'upload-metadata': formatTusMetadata({
        organization_id: 'bench',
        match_id: meta.match_id,
        kind: meta.kind ?? 'camera',
        filename: 'file.bin',
        sha256: createHash('sha256').update(bytes).digest('hex'),
      }),
    },
  });
  if (created.status !== 201) {
    return {
      status: 'refused',
      createStatus: created.status,
      sentBytes: 0,
      body: await created.json().catch(() => null),
    };
  }
  const path = new URL(created.headers.get('location') ?? '', baseUrl).pathname;
  let offset = 0;
  let sentBytes = 0;
  for (let tries = 0; offset < bytes.length && tries < 100; tries++) {
    const body = bytes.subarray(offset, Math.min(bytes.length, offset + chunkBytes));
    const r = await fetch(`${baseUrl}${path}`, {
      method: 'PATCH',
      headers: { ...headers, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
      body,
    });
    sentBytes += body.length;
    if (r.status === 204) {
      offset = Number(r.headers.get('upload-offset'));
      continue;
    }
    await r.arrayBuffer().catch(() => undefined);
    if (r.status >= 500 && r.status !== 507) {
      const head = await fetch(`${baseUrl}${path}`, { method: 'HEAD', headers });
      if (head.status !== 200) return { status: 'failed', createStatus: 201, sentBytes };
      offset = Number(head.headers.get('upload-offset'));
      continue;
    }
    return { status: 'failed', createStatus: 201, sentBytes, body: r.status };
  }
  return { status: offset === bytes.length ? 'completed' : 'failed', createStatus: 201, sentBytes };
}

/** Sum of a Prometheus counter's samples whose labels include `labels`. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.split(' ').pop());
  }
  return sum;
}

/** Samples a process's resident set size (VmRSS, bytes) from /proc. */
export async function rssBytes(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kib * 1024;
}
