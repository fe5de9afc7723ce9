import { UPLOAD_CONFIRMATION_HEADER, UPLOAD_COPIES_HEADER } from '@polyvision/shared';
import type { Queryable } from '../db/index.ts';
import { fail } from './tus-creation.ts';
import { getUploadRow } from './upload-rows.ts';

/** `Upload-Checksum` algorithms (tus "Checksum" extension) → node:crypto hash names. */
export const CHECKSUM_ALGORITHMS: Record<string, string> = { sha1: 'sha1', sha256: 'sha256', md5: 'md5' };

/**
 * Reads a request body whole, refusing it past `maxBytes`.
 * @throws PolyvisionError 413 `checksum_chunk_too_large`.
 */
export async function readCapped(request: Request, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  if (!request.body) return Buffer.alloc(0);
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      fail('checksum_chunk_too_large', `a PATCH with Upload-Checksum may carry at most ${maxBytes} bytes`, 413);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks, size);
}

/** A copy of `request` with one header set (the streamed body is passed on, not read). */
export function withHeader(request: Request, name: string, value: string): Request {
  const headers = new Headers(request.headers);
  headers.set(name, value);
  return new Request(request.url, {
    method: request.method,
    headers,
    body: request.body,
    duplex: 'half', // Node's Request needs it for a streamed body
  });
}

/** What the confirmation needs to know of a file's copies (replication). */
export interface UploadCopies {
  /** Copies required per file on this fleet. */
  required: number;
  /** Verified copies of a catalogued file. */
  verified(fileId: string): Promise<number>;
  /** Starts making the missing copies of a file (not awaited; a HEAD of an under-replicated upload calls it). */
  kick?(fileId: string): void;
}

/**
 * The core's receipt to the edge: on a 2xx PATCH or HEAD of an upload that is
 * completed (stored on its SE, sha256 verified there, catalogued), sets
 * `Polyvision-Copies: <verified>/<required>` and, only once every required
 * copy is verified, `X-Content-SHA256: <hex>` — the header the edge spool
 * waits for before it deletes its copy (edge/README.md, "Spool, upload and
 * confirmation"). Without `copies`, one copy is required.
 */
export async function confirm(
  response: Response,
  method: string,
  uploadId: string | undefined,
  db: Queryable,
  copies?: UploadCopies,
) {
  if ((method !== 'PATCH' && method !== 'HEAD') || !uploadId || response.status >= 300) return response;
  const row = await getUploadRow(db, uploadId);
  if (row?.status !== 'completed') return response;
  const headers = new Headers(response.headers);
  const required = copies?.required ?? 1;
  const verified = copies ? await copies.verified(row.file_id) : 1;
  headers.set(UPLOAD_COPIES_HEADER, `${verified}/${required}`);
  if (verified >= required) headers.set(UPLOAD_CONFIRMATION_HEADER, row.sha256);
  else if (method === 'HEAD') copies?.kick?.(row.file_id);
  return new Response(response.body, { status: response.status, headers });
}

/** Adds what tus does not: `Retry-After` on 507, JSON content type, checksum on OPTIONS. */
export async function decorate(response: Response, method: string, retryAfterSeconds: number): Promise<Response> {
  const headers = new Headers(response.headers);
  if (method === 'OPTIONS') {
    const extensions = headers.get('tus-extension');
    if (extensions && !extensions.includes('checksum')) headers.set('tus-extension', `${extensions},checksum`);
    headers.set('tus-checksum-algorithm', Object.keys(CHECKSUM_ALGORITHMS).join(','));
  }
  if (response.status >= 400 && response.body) {
    const text = await response.text();
    if (text.startsWith('{')) headers.set('content-type', 'application/json');
    if (response.status === 507) {
      let seconds = retryAfterSeconds;
      try {
        const ms = (JSON.parse(text) as { retry_after_ms?: unknown }).retry_after_ms;
        if (typeof ms === 'number' && ms >= 0) seconds = Math.max(1, Math.ceil(ms / 1000));
      } catch {}
      headers.set('retry-after', String(seconds));
    }
    headers.delete('content-length');
    return new Response(text, { status: response.status, headers });
  }
  return new Response(response.body, { status: response.status, headers });
}
