import { createHash } from 'node:crypto';
import type { SeProcess } from './se-process.ts';

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Deterministic pseudo-random bytes. */
export function testBytes(length: number, seed = 1): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export function postJson(se: SeProcess, path: string, body: unknown): Promise<Response> {
  return se.fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export function patchBytes(se: SeProcess, uploadId: string, offset: number, bytes: Uint8Array): Promise<Response> {
  return se.fetch(`/api/v1/uploads/${uploadId}`, {
    method: 'PATCH',
    headers: { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' },
    body: bytes,
  });
}

/** Creates an upload (reserving implicitly), appends in chunks, completes. Returns the upload id. */
export async function uploadFile(
  se: SeProcess,
  fileId: string,
  bytes: Buffer,
  { chunkBytes = 256 * 1024, withSha = true } = {},
): Promise<{ uploadId: string; complete: Response }> {
  const created = await postJson(se, '/api/v1/uploads', {
    file_id: fileId,
    size_bytes: bytes.length,
    ...(withSha ? { sha256: sha256Hex(bytes) } : {}),
  });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
  const { upload_id: uploadId } = await json<{ upload_id: string }>(created);
  for (let offset = 0; offset < bytes.length; offset += chunkBytes) {
    const r = await patchBytes(se, uploadId, offset, bytes.subarray(offset, offset + chunkBytes));
    if (r.status !== 204) throw new Error(`append at ${offset}: ${r.status} ${await r.text()}`);
  }
  const complete = await postJson(se, `/api/v1/uploads/${uploadId}/complete`, {});
  return { uploadId, complete };
}

export async function capacity(
  se: SeProcess,
): Promise<{ used: number; available: number; reserved: number; total: number }> {
  const r = await se.fetch('/api/v1/capacity');
  if (r.status !== 200) throw new Error(`capacity: ${r.status}`);
  return json(r);
}
