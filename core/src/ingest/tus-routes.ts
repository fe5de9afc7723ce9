import { createHash, randomBytes } from 'node:crypto';
import { Server } from '@tus/server';
import type { Locker } from '@tus/utils';
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Queryable } from '../db/index.ts';
import type { EdgeIdentity } from './edge-tokens.ts';
import type { StorageElementDataStore, UploadOwner } from './se-data-store.ts';
import { checkCreation, fail } from './tus-creation.ts';
import { CHECKSUM_ALGORITHMS, confirm, decorate, readCapped, type UploadCopies, withHeader } from './tus-responses.ts';
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
  /** Copies per file (replication): the confirmation waits for all of them. @defaultValue one copy */
  copies?: UploadCopies;
}

type Env = { Variables: { edge: EdgeIdentity } };

/** An upload id: 128 random bits in lower-case hex. */
const UPLOAD_ID = /^[0-9a-f]{32}$/;

/**
 * tus 1.0.0 (https://tus.io/protocols/resumable-upload) at `/api/v1/uploads`
 * on @tus/server's `handleWeb`, behind edge bearer auth (the caller mounts
 * the auth middleware that sets `c.var.edge`). Around tus, this adds:
 *
 * - creation: checked by {@link checkCreation} (metadata, organization,
 *   `Upload-Length` from 1 to `maxUploadBytes`) — each a JSON error;
 * - an id that is not 32 hex digits is `404 upload_not_found` at once;
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
    return confirm(decorated, c.req.method, c.req.param('id'), options.db, options.copies);
  };

  app.options(UPLOADS_PATH, (c) => handle(c, c.req.raw));
  app.options(`${UPLOADS_PATH}/:id`, (c) => handle(c, c.req.raw));

  app.post(UPLOADS_PATH, async (c) => {
    const edge = c.get('edge');
    checkCreation(c.req.raw.headers, edge, options);
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
    const id = c.req.param('id') ?? '';
    // Ids are 32 hex digits (chosen above); anything else names no upload and never reaches PostgreSQL.
    if (!UPLOAD_ID.test(id)) fail('upload_not_found', 'no such upload', 404);
    const row = await getUploadRow(options.db, id);
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
