import type { IncomingMessage } from 'node:http';
import { PolyvisionError } from '@polyvision/shared';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { seErrors } from '../errors.ts';
import { assertSafeId, newId, parseSizeBytes } from '../ids.ts';
import type { UploadView } from '../uploads/upload-record.ts';
import type { SeEnv, SeServices } from './context.ts';
import { assertWritable, isHeaderSafeContentType, parseSha256, readJsonObject } from './request-helpers.ts';
import { reserveBytes } from './reservation-routes.ts';

const APPEND_CONTENT_TYPES = new Set(['application/offset+octet-stream', 'application/octet-stream']);

function offsetHeaders(c: Context, v: UploadView): void {
  c.header('Upload-Offset', String(v.offset));
  c.header('Upload-Length', String(v.size_bytes));
  c.header('Cache-Control', 'no-store');
}

/** The request body as a byte stream: Node's IncomingMessage when served by node, else the web stream. */
function bodyStream(c: Context<SeEnv>, idleTimeoutMs: number): AsyncIterable<Uint8Array> | null {
  const incoming = c.env?.incoming;
  if (incoming) return idleLimited(incoming, idleTimeoutMs);
  return (c.req.raw.body as AsyncIterable<Uint8Array> | null) ?? null;
}

/**
 * The request body, cut when no byte arrives for `idleTimeoutMs`: the
 * request is destroyed with an `ECONNRESET`-coded error, which the upload
 * store treats as a client that went away (bytes so far kept, upload free again).
 */
async function* idleLimited(incoming: IncomingMessage, idleTimeoutMs: number): AsyncGenerator<Uint8Array> {
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const error = Object.assign(new Error(`no body byte for ${idleTimeoutMs} ms`), { code: 'ECONNRESET' });
      incoming.destroy(error);
    }, idleTimeoutMs);
  };
  arm();
  try {
    for await (const chunk of incoming) {
      arm();
      yield chunk as Uint8Array;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Most bytes of a refused append body read and discarded before answering; beyond, the connection is closed. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/** Reads and discards what is left of a request body, up to `limitBytes`; true when it ended. */
async function drainBody(incoming: IncomingMessage, limitBytes: number): Promise<boolean> {
  if (incoming.complete || incoming.destroyed) return true;
  let seen = 0;
  try {
    for await (const chunk of incoming) {
      seen += (chunk as Buffer).byteLength;
      if (seen > limitBytes) return false;
    }
    return true;
  } catch {
    return false;
  }
}

function count507(s: SeServices, reason: string, error: unknown): void {
  if (error instanceof PolyvisionError && error.httpStatus === 507) s.metrics.insufficientStorage.inc({ reason });
}

/**
 * Resumable upload routes (README, "Routes"): create, append (`PATCH` with
 * `Upload-Offset`), offset (`HEAD`/`GET`), complete, abort.
 */
export function uploadRoutes(s: SeServices): Hono<SeEnv> {
  const app = new Hono<SeEnv>();

  app.post('/api/v1/uploads', async (c) => {
    assertWritable(s.config);
    const body = await readJsonObject(c);
    const fileId = body.file_id === undefined ? newId('f') : assertSafeId('file_id', body.file_id);
    const sizeBytes = parseSizeBytes('size_bytes', body.size_bytes);
    const sha256 = parseSha256(body.sha256);
    const reservationId =
      body.reservation_id === undefined || body.reservation_id === null
        ? undefined
        : assertSafeId('reservation_id', body.reservation_id);
    if (body.content_type !== undefined && !isHeaderSafeContentType(body.content_type)) {
      // It is sent back as the file's Content-Type on every read: a CR/LF or NUL there would break every read.
      throw seErrors.invalidRequest(
        'content_type must be a string of at most 200 printable ASCII characters (no CR, LF or other control character)',
      );
    }
    const contentType = (body.content_type as string | undefined) ?? 'application/octet-stream';
    const view = await s.uploads.create({
      fileId,
      sizeBytes,
      sha256,
      contentType,
      reservationId,
      reserve: async (bytes) =>
        (await reserveBytes(s, bytes, s.config.reservationTtlMs, 'upload_create')).reservationId,
    });
    c.header('Location', `/api/v1/uploads/${view.upload_id}`);
    offsetHeaders(c, view);
    return c.json(view, 201);
  });

  app.get('/api/v1/uploads/:id', (c) => {
    const view = s.uploads.get(assertSafeId('upload_id', c.req.param('id')));
    offsetHeaders(c, view);
    if (c.req.method === 'HEAD') return c.body(null, 200);
    return c.json(view);
  });

  app.patch('/api/v1/uploads/:id', async (c) => {
    assertWritable(s.config);
    const uploadId = assertSafeId('upload_id', c.req.param('id'));
    const offsetHeader = c.req.header('upload-offset');
    if (offsetHeader === undefined || !/^\d{1,16}$/.test(offsetHeader) || !Number.isSafeInteger(Number(offsetHeader))) {
      throw seErrors.invalidOffset(offsetHeader);
    }
    const contentType = c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase();
    if (contentType !== undefined && !APPEND_CONTENT_TYPES.has(contentType)) {
      throw new PolyvisionError(
        'unsupported_media_type',
        'append bodies are application/offset+octet-stream (or application/octet-stream)',
        { httpStatus: 415 },
      );
    }
    const lengthHeader = c.req.header('content-length');
    const contentLength =
      lengthHeader === undefined ? undefined : parseSizeBytes('Content-Length', lengthHeader, { fromHeader: true });
    let offset: number;
    try {
      offset = await s.uploads.append(
        uploadId,
        Number(offsetHeader),
        bodyStream(c, s.config.bodyIdleTimeoutMs),
        contentLength,
      );
    } catch (error) {
      count507(s, 'append', error);
      // Read the rest of a refused body (up to a cap) so the client, still sending, can read the answer.
      if (c.env?.incoming && !(await drainBody(c.env.incoming, DRAIN_LIMIT_BYTES))) c.header('Connection', 'close');
      throw error;
    }
    c.header('Upload-Offset', String(offset));
    return c.body(null, 204);
  });

  app.post('/api/v1/uploads/:id/complete', async (c) => {
    const uploadId = assertSafeId('upload_id', c.req.param('id'));
    const body = await readJsonObject(c, { optional: true });
    const existing = s.uploads.get(uploadId);
    if (existing.state !== 'completed') assertWritable(s.config);
    const file = await s.uploads.complete(uploadId, parseSha256(body.sha256));
    const etag = `"sha256:${file.sha256}"`;
    c.header('Location', `/api/v1/files/${file.fileId}`);
    c.header('ETag', etag);
    return c.json(
      { file_id: file.fileId, size_bytes: file.sizeBytes, sha256: file.sha256, etag, created_at: file.createdAt },
      201,
    );
  });

  app.delete('/api/v1/uploads/:id', async (c) => {
    await s.uploads.abort(assertSafeId('upload_id', c.req.param('id')));
    return c.body(null, 204);
  });

  return app;
}
