import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Hono } from 'hono';
import { seErrors } from '../errors.ts';
import { etagMatches, parseRange } from '../files/range.ts';
import { assertSafeId } from '../ids.ts';
import type { SeEnv, SeServices } from './context.ts';
import { isHeaderSafeContentType } from './request-helpers.ts';

/**
 * The platform's own `Response` class. @hono/node-server replaces the global
 * with a lighter class whose prototype chain leads to the native one; its
 * instances take a fast path that ignores `x-hono-already-sent`
 * (node-server 2.1.8), so the "already sent" marker must be a native Response.
 */
function nativeResponse(): typeof Response {
  const parent: unknown = Object.getPrototypeOf(globalThis.Response);
  return typeof parent === 'function' && parent.name === 'Response' ? (parent as typeof Response) : globalThis.Response;
}

/** Tells @hono/node-server that the handler wrote the response itself. */
function alreadySent(): Response {
  const NativeResponse = nativeResponse();
  return new NativeResponse(null, { headers: { 'x-hono-already-sent': 'true' } });
}

/**
 * File routes: `GET|HEAD /api/v1/files/:id` (single `Range`, strong ETag
 * `"sha256:<hex>"`, `If-None-Match`, `If-Range`) and `DELETE` (mode `edit` only).
 */
export function fileRoutes(s: SeServices): Hono<SeEnv> {
  const app = new Hono<SeEnv>();

  app.get('/api/v1/files/:id', async (c) => {
    const fileId = assertSafeId('file_id', c.req.param('id'));
    const meta = await s.backend.stat(fileId);
    if (!meta) throw seErrors.fileNotFound(fileId);
    const etag = `"sha256:${meta.sha256}"`;
    const headers: Record<string, string> = {
      etag,
      'accept-ranges': 'bytes',
      'x-content-sha256': meta.sha256,
      'last-modified': new Date(meta.createdAt).toUTCString(),
    };
    if (etagMatches(c.req.header('if-none-match'), etag)) return c.body(null, 304, headers);
    const ifRange = c.req.header('if-range');
    const outcome =
      ifRange !== undefined && ifRange.trim() !== etag
        ? { kind: 'whole' as const }
        : parseRange(c.req.header('range'), meta.sizeBytes);
    if (outcome.kind === 'unsatisfiable') {
      headers['content-range'] = `bytes */${meta.sizeBytes}`;
      return c.json({ code: 'range_not_satisfiable', message: `the file has ${meta.sizeBytes} bytes` }, 416, headers);
    }
    const range = outcome.kind === 'partial' ? outcome.range : undefined;
    const length = range ? range.end - range.start + 1 : meta.sizeBytes;
    // A file stored before content types were checked may hold one no header can carry.
    headers['content-type'] = isHeaderSafeContentType(meta.contentType) ? meta.contentType : 'application/octet-stream';
    headers['content-length'] = String(length);
    if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${meta.sizeBytes}`;
    const status = range ? 206 : 200;
    if (c.req.method === 'HEAD' || length === 0) return c.body(null, status, headers);
    const stream = await s.backend.read(fileId, range);
    stream.once('end', () => s.metrics.bytesRead.inc(length));
    const outgoing = c.env?.outgoing;
    if (outgoing && 'writeHead' in outgoing) {
      // Served by node: pipe the file stream straight into the socket (no web-stream hop), with backpressure.
      outgoing.writeHead(status, headers);
      pipeline(stream, outgoing).catch((error: unknown) => {
        s.logger.debug({ err: error, fileId }, 'reader went away');
      });
      return alreadySent();
    }
    return c.body(Readable.toWeb(stream) as ReadableStream<Uint8Array>, status, headers);
  });

  app.delete('/api/v1/files/:id', async (c) => {
    const fileId = assertSafeId('file_id', c.req.param('id'));
    if (s.config.mode !== 'edit') throw seErrors.deleteNotAllowed(s.config.mode);
    if (!(await s.backend.delete(fileId))) throw seErrors.fileNotFound(fileId);
    return c.body(null, 204);
  });

  return app;
}
