import { createHash, randomBytes } from 'node:crypto';
import {
  PolyvisionError,
  parseTusMetadata,
  UPLOAD_CONFIRMATION_HEADER,
  uploadMetadataSchema,
} from '@polyvision/shared';
import { Server } from '@tus/server';
import type { Locker } from '@tus/utils';
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Queryable } from '../db/index.ts';
import type { EdgeIdentity } from './edge-tokens.ts';
import type { StorageElementDataStore, UploadOwner } from './se-data-store.ts';
import { getUploadRow } from './upload-rows.ts';

export const UPLOADS_PATH = '/api/v1/uploads';

/** Options of {@link tusRoutes}. */
export interface TusRoutesOptions {
  db: Queryable;
  store: StorageElementDataStore;
  locker: Locker;
  /** Largest `Upload-Length`, in bytes. */
  maxUploadBytes: number;
  /** Largest `Upload-Metadata` header, in bytes. */
  maxMetadataBytes: number;
  /** Largest PATCH body that carries `Upload-Checksum` (checked before it is forwarded), in bytes. */
  checksumMaxChunkBytes: number;
  /** `Retry-After` of a final 507, in seconds. */
  retryAfterSeconds: number;
  /** Resolves the owner of an upload being created (shared with the data store). */
  owners: Map<string, UploadOwner>;
}

type Env = { Variables: { edge: EdgeIdentity } };

const CHECKSUM_ALGORITHMS: Record<string, string> = { sha1: 'sha1', sha256: 'sha256', md5: 'md5' };

function fail(code: string, message: string, httpStatus: number, details: Record<string, unknown> = {}): never {
  throw new PolyvisionError(code, message, { httpStatus, details });
}

/**
 * tus 1.0.0 (https://tus.io/protocols/resumable-upload) at `/api/v1/uploads`
 * on @tus/server's `handleWeb`, behind edge bearer auth (the caller mounts
 * the auth middleware that sets `c.var.edge`). Around tus, this adds:
 *
 * - creation: `Upload-Metadata` at most `maxMetadataBytes`, decoded and
 *   validated (`organization_id`, `match_id`, `kind`, `filename`, `sha256`),
 *   its organization equal to the token's (403 otherwise), `Upload-Length`
 *   required and at most `maxUploadBytes` (413) — each a JSON error;
 * - checksum extension (which @tus/server lacks): a PATCH with
 *   `Upload-Checksum: <algo> <base64>` is read (at most
 *   `checksumMaxChunkBytes`), hashed and refused with 460 on mismatch
 *   before any byte reaches the SE; `Tus-Checksum-Algorithm` on OPTIONS;
 * - uploads of another organization are `404`;
 * - a final `507` carries `Retry-After`; JSON bodies get `Content-Type`.
 */
export function tusRoutes(options: TusRoutesOptions): Hono<Env> {
  const server = new Server({
    path: UPLOADS_PATH,
    datastore: options.store,
    locker: options.locker,
    maxSize: options.maxUploadBytes,
    relativeLocation: true,
    respectForwardedHeaders: false,
    disableTerminationForFinishedUploads: true,
    // The POST route below picks the id (so the data store can learn its owner) and passes it in a header it sets itself.
    namingFunction: (req) => req.headers.get('x-polyvision-upload-id') ?? randomBytes(16).toString('hex'),
    onUploadCreate: async (_req, upload) => ({ metadata: upload.metadata }),
    onUploadFinish: async (_req, upload) => {
      await options.store.finish(upload.id);
      return {};
    },
  });

  const app = new Hono<Env>();
  const handle = async (c: Context<Env>, request: Request): Promise<Response> => {
    const response = await server.handleWeb(request);
    const decorated = await decorate(response, c.req.method, options.retryAfterSeconds);
    return confirm(decorated, c.req.method, c.req.param('id'), options.db);
  };

  app.options(UPLOADS_PATH, (c) => handle(c, c.req.raw));
  app.options(`${UPLOADS_PATH}/:id`, (c) => handle(c, c.req.raw));

  app.post(UPLOADS_PATH, async (c) => {
    const edge = c.get('edge');
    if (c.req.header('upload-defer-length')) {
      fail('upload_length_required', 'Upload-Length is required; deferred length is not supported', 400);
    }
    const lengthHeader = c.req.header('upload-length');
    if (lengthHeader === undefined || !/^\d+$/.test(lengthHeader)) {
      fail('invalid_upload_length', 'Upload-Length must be a non-negative integer', 400);
    }
    if (Number(lengthHeader) > options.maxUploadBytes) {
      fail(
        'upload_too_large',
        `Upload-Length ${lengthHeader} exceeds the limit of ${options.maxUploadBytes} bytes`,
        413,
        {
          max_upload_bytes: options.maxUploadBytes,
        },
      );
    }
    const header = c.req.header('upload-metadata') ?? '';
    if (Buffer.byteLength(header) > options.maxMetadataBytes) {
      fail('metadata_too_large', `Upload-Metadata exceeds ${options.maxMetadataBytes} bytes`, 400, {
        max_metadata_bytes: options.maxMetadataBytes,
      });
    }
    let raw: Record<string, string>;
    try {
      raw = parseTusMetadata(header);
    } catch (error) {
      fail('invalid_metadata', `Upload-Metadata: ${(error as Error).message}`, 400);
    }
    const parsed = uploadMetadataSchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      fail('invalid_metadata', `Upload-Metadata ${issue?.path.join('.') || '(root)'}: ${issue?.message}`, 400, {
        field: issue?.path.join('.') ?? null,
      });
    }
    if (parsed.data.organization_id !== edge.organization_id) {
      fail(
        'organization_forbidden',
        `this token belongs to organization "${edge.organization_id}", not "${parsed.data.organization_id}"`,
        403,
      );
    }
    // The data store learns the owner through this map, keyed by the id tus is about to choose.
    const request = c.req.raw;
    const owners = options.owners;
    const pending = { token_id: edge.token_id, edge_id: edge.edge_id };
    const id = randomBytes(16).toString('hex');
    owners.set(id, pending);
    try {
      return await handle(c, withHeader(request, 'x-polyvision-upload-id', id));
    } finally {
      owners.delete(id);
    }
  });

  const guard = async (c: Context<Env>): Promise<void> => {
    const row = await getUploadRow(options.db, c.req.param('id') ?? '');
    if (row && row.organization_id !== c.get('edge').organization_id) {
      fail('upload_not_found', 'no such upload', 404);
    }
  };

  app.on(['HEAD', 'GET', 'DELETE'], `${UPLOADS_PATH}/:id`, async (c) => {
    await guard(c);
    return handle(c, c.req.raw);
  });

  app.patch(`${UPLOADS_PATH}/:id`, async (c) => {
    await guard(c);
    const checksum = c.req.header('upload-checksum');
    if (!checksum) return handle(c, c.req.raw);
    const [algorithm, expected, ...rest] = checksum.trim().split(' ');
    const hash = algorithm ? CHECKSUM_ALGORITHMS[algorithm] : undefined;
    if (!hash || !expected || rest.length > 0) {
      fail('checksum_algorithm_unsupported', `Upload-Checksum "${checksum}" is not "<sha1|sha256|md5> <base64>"`, 400);
    }
    const declared = Number(c.req.header('content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > options.checksumMaxChunkBytes) {
      fail(
        'checksum_chunk_too_large',
        `a PATCH with Upload-Checksum may carry at most ${options.checksumMaxChunkBytes} bytes`,
        413,
      );
    }
    const body = await readCapped(c.req.raw, options.checksumMaxChunkBytes);
    const actual = createHash(hash).update(body).digest('base64');
    if (actual !== expected) {
      return c.json(
        { code: 'checksum_mismatch', message: `Upload-Checksum ${algorithm} does not match the body`, actual },
        460 as never,
        {
          'tus-resumable': '1.0.0',
        },
      );
    }
    const headers = new Headers(c.req.raw.headers);
    headers.set('content-length', String(body.byteLength));
    headers.delete('transfer-encoding');
    return handle(c, new Request(c.req.raw.url, { method: 'PATCH', headers, body }));
  });

  return app;
}

async function readCapped(request: Request, maxBytes: number): Promise<Buffer> {
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

function withHeader(request: Request, name: string, value: string): Request {
  const headers = new Headers(request.headers);
  headers.set(name, value);
  return new Request(request.url, {
    method: request.method,
    headers,
    body: request.body,
    duplex: 'half', // Node's Request needs it for a streamed body
  });
}

/**
 * The core's receipt to the edge: on a 2xx PATCH or HEAD of an upload that is
 * completed (stored on its SE, sha256 verified there, catalogued), sets
 * `X-Content-SHA256: <hex>` — the header the edge spool waits for before it
 * deletes its copy (edge/README.md, "Spool, upload and confirmation").
 */
async function confirm(response: Response, method: string, uploadId: string | undefined, db: Queryable) {
  if ((method !== 'PATCH' && method !== 'HEAD') || !uploadId || response.status >= 300) return response;
  const row = await getUploadRow(db, uploadId);
  if (row?.status !== 'completed') return response;
  const headers = new Headers(response.headers);
  headers.set(UPLOAD_CONFIRMATION_HEADER, row.sha256);
  return new Response(response.body, { status: response.status, headers });
}

/** Adds what tus does not: `Retry-After` on 507, JSON content type, checksum on OPTIONS. */
async function decorate(response: Response, method: string, retryAfterSeconds: number): Promise<Response> {
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
