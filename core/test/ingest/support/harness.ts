import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatTusMetadata } from '@polyvision/shared';
import { testBytes as seTestBytes, sha256Hex } from '../../../../storage-element/test/support/client.ts';
import { type SeProcess, startSe, TOKEN } from '../../../../storage-element/test/support/se-process.ts';
import { type ServiceProcess, serviceUrl, spawnService } from '../../../../test/support/index.ts';
import { type RunningIngest, startIngest } from '../../../src/ingest/index.ts';
import { loadIngestSettings } from '../../../src/ingest/options.ts';

export { type SeProcess, sha256Hex, startSe, TOKEN as SE_TOKEN };

const MAIN = resolve(fileURLToPath(new URL('../../../src/ingest/main.ts', import.meta.url)));

/** The STORAGE_ELEMENTS JSON for running SEs (with map coordinates where given). */
export function storageElementsJson(
  ses: Array<{ se: SeProcess; id: string; location: string; coordinates?: { lat: number; lon: number } }>,
): string {
  return JSON.stringify(
    ses.map(({ se, id, location, coordinates }) => ({
      storage_id: id,
      endpoint: se.url,
      token: TOKEN,
      location,
      ...(coordinates ? { coordinates } : {}),
    })),
  );
}

/** The `METRICS_TOKENS` entry of {@link ingestEnv}: `/metrics` and readiness details. */
export const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** `fetch` options carrying {@link METRICS_TOKEN}. */
export const METRICS_AUTH = { headers: { authorization: `Bearer ${METRICS_TOKEN}` } };

/** Test defaults: fast polling, short leases. */
export function ingestEnv(over: Record<string, string>): Record<string, string> {
  return {
    REDIS_URL: serviceUrl('REDIS_URL'),
    DATABASE_URL: serviceUrl('DATABASE_URL'),
    INGEST_PORT: '0',
    CAPACITY_MONITOR_LEADER_TTL: '2',
    CAPACITY_MONITOR_LEADER_RENEWAL_INTERVAL: '0.5',
    CAPACITY_MONITOR_BASE_INTERVAL: '0.3',
    CAPACITY_MONITOR_MAX_INTERVAL: '3',
    CAPACITY_MONITOR_HTTP_TIMEOUT: '2',
    CAPACITY_MONITOR_HTTP_RETRIES: '0',
    CAPACITY_MONITOR_RETRY_BASE_DELAY: '0.05',
    INGEST_TUS_LOCK_LEASE_MS: '1500',
    METRICS_TOKENS: METRICS_TOKEN,
    ...over,
  };
}

/** An ingest replica in this process. */
export function startIngestInProcess(env: Record<string, string>): Promise<RunningIngest> {
  return startIngest(loadIngestSettings(env));
}

/** An ingest replica as a child process (to kill it). */
export type IngestProcess = ServiceProcess;

export function spawnIngest(env: Record<string, string>): Promise<IngestProcess> {
  return spawnService(MAIN, env, { label: 'ingest' });
}

/** Deterministic pseudo-random bytes (the SE tests' generator; this harness's default seed is 7). */
export function testBytes(length: number, seed = 7): Buffer {
  return seTestBytes(length, seed);
}

/** The tus metadata of a test file. */
export function metadataFor(bytes: Uint8Array, over: Record<string, string> = {}): Record<string, string> {
  return {
    organization_id: 'acme',
    match_id: 'm-1',
    kind: 'panorama',
    filename: 'panorama.mp4',
    sha256: sha256Hex(bytes),
    ...over,
  };
}

/** A tiny tus 1.0.0 client on fetch, for precise protocol tests. */
export class TusClient {
  readonly baseUrl: string;
  readonly token: string;
  constructor(baseUrl: string, token: string) {
    this.baseUrl = baseUrl;
    this.token = token;
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { 'tus-resumable': '1.0.0', authorization: `Bearer ${this.token}`, ...extra };
  }

  async create(sizeBytes: number, metadata: Record<string, string> | string): Promise<Response> {
    return fetch(`${this.baseUrl}/api/v1/uploads`, {
      method: 'POST',
      headers: this.headers({
        'upload-length': String(sizeBytes),
        'upload-metadata': typeof metadata === 'string' ? metadata : formatTusMetadata(metadata),
      }),
    });
  }

  /** Creates and returns the upload URL; throws with the answer otherwise. */
  async createOk(sizeBytes: number, metadata: Record<string, string>): Promise<string> {
    const response = await this.create(sizeBytes, metadata);
    if (response.status !== 201) throw new Error(`create: ${response.status} ${await response.text()}`);
    return new URL(response.headers.get('location') ?? '', this.baseUrl).pathname;
  }

  patch(path: string, offset: number, body: Uint8Array, extra: Record<string, string> = {}): Promise<Response> {
    return fetch(`${this.baseUrl}${path}`, {
      method: 'PATCH',
      headers: this.headers({
        'upload-offset': String(offset),
        'content-type': 'application/offset+octet-stream',
        ...extra,
      }),
      body,
    });
  }

  async offset(path: string): Promise<{ status: number; offset: number }> {
    const response = await fetch(`${this.baseUrl}${path}`, { method: 'HEAD', headers: this.headers() });
    return { status: response.status, offset: Number(response.headers.get('upload-offset')) };
  }

  /** Sends `bytes` from `from` in chunks; returns the last answer. */
  async send(path: string, bytes: Uint8Array, from = 0, chunkBytes = 256 * 1024): Promise<Response> {
    let offset = from;
    let last: Response | undefined;
    while (offset < bytes.length) {
      const chunk = bytes.subarray(offset, Math.min(bytes.length, offset + chunkBytes));
      last = await this.patch(path, offset, chunk);
      if (last.status !== 204) return last;
      offset = Number(last.headers.get('upload-offset'));
    }
    if (!last) throw new Error('nothing to send');
    return last;
  }
}
