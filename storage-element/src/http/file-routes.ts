import { Readable } from 'node:stream';
import { Hono } from 'hono';
import { seErrors } from '../errors.ts';
import { etagMatches, parseRange } from '../files/range.ts';
import { assertSafeId } from '../ids.ts';
import type { SeEnv, SeServices } from './context.ts';

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
    c.header('ETag', etag);
    c.header('Accept-Ranges', 'bytes');
    c.header('X-Content-SHA256', meta.sha256);
    c.header('Last-Modified', new Date(meta.createdAt).toUTCString());
    if (etagMatches(c.req.header('if-none-match'), etag)) return c.body(null, 304);
    const ifRange = c.req.header('if-range');
    const outcome =
      ifRange !== undefined && ifRange.trim() !== etag
        ? { kind: 'whole' as const }
        : parseRange(c.req.header('range'), meta.sizeBytes);
    if (outcome.kind === 'unsatisfiable') {
      c.header('Content-Range', `bytes */${meta.sizeBytes}`);
      return c.json({ code: 'range_not_satisfiable', message: `the file has ${meta.sizeBytes} bytes` }, 416);
    }
    const range = outcome.kind === 'partial' ? outcome.range : undefined;
    const length = range ? range.end - range.start + 1 : meta.sizeBytes;
    c.header('Content-Type', meta.contentType);
    c.header('Content-Length', String(length));
    if (range) c.header('Content-Range', `bytes ${range.start}-${range.end}/${meta.sizeBytes}`);
    const status = range ? 206 : 200;
    if (c.req.method === 'HEAD' || length === 0) return c.body(null, status);
    const stream = await s.backend.read(fileId, range);
    stream.once('end', () => s.metrics.bytesRead.inc(length));
    return c.body(Readable.toWeb(stream) as ReadableStream<Uint8Array>, status);
  });

  app.delete('/api/v1/files/:id', async (c) => {
    const fileId = assertSafeId('file_id', c.req.param('id'));
    if (s.config.mode !== 'edit') throw seErrors.deleteNotAllowed(s.config.mode);
    if (!(await s.backend.delete(fileId))) throw seErrors.fileNotFound(fileId);
    return c.body(null, 204);
  });

  return app;
}
