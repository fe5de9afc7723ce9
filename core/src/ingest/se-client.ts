import type { Readable } from 'node:stream';
import { httpJsonResponse, networkError, PolyvisionError, statusError } from '@polyvision/shared';
import { type Dispatcher, request } from 'undici';
import { z } from 'zod';
import type { StorageElementConfig } from '../capacity/index.ts';

/** An SE answered 507: no room for `requested` bytes (it had `available`). */
export class InsufficientStorageError extends PolyvisionError {
  readonly storageId: string;
  constructor(
    storageId: string,
    message: string,
    details: { available?: number; requested?: number; peer_code?: string },
  ) {
    super('insufficient_storage', message, {
      retriable: true,
      httpStatus: 507,
      details: { storage_id: storageId, ...details },
    });
    this.name = 'InsufficientStorageError';
    this.storageId = storageId;
  }
}

const reservationSchema = z.object({ reservation_id: z.string(), expires_at: z.string() });
const createdUploadSchema = z.object({ upload_id: z.string(), offset: z.number().int().nonnegative() });
const completedSchema = z.object({ file_id: z.string(), size_bytes: z.number(), sha256: z.string() });

/** Options shared by the calls. Durations in ms. */
export interface SeClientOptions {
  /** Timeout of the small JSON calls. @defaultValue 15_000 */
  timeoutMs?: number;
  /** Longest silence on a streamed append before it fails. @defaultValue 60_000 */
  streamIdleTimeoutMs?: number;
  dispatcher?: Dispatcher;
}

/**
 * The ingest side of the storage-element API (storage-element/README.md):
 * reservations and resumable writes, over HTTP only, with the SE's own
 * bearer token. Every 507 becomes an {@link InsufficientStorageError}; other
 * failures are the shared HTTP client's PolyvisionErrors (`details.status`,
 * `details.peer_code` carry the SE's answer).
 */
export class StorageElementClient {
  readonly #timeoutMs: number;
  readonly #idleMs: number;
  readonly #dispatcher: Dispatcher | undefined;

  constructor(options: SeClientOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 15_000;
    this.#idleMs = options.streamIdleTimeoutMs ?? 60_000;
    this.#dispatcher = options.dispatcher;
  }

  /**
   * `POST /api/v1/reservations {size_bytes, ttl_ms}`.
   * @throws InsufficientStorageError on 507; PolyvisionError otherwise.
   */
  async reserve(se: StorageElementConfig, sizeBytes: number, ttlMs: number): Promise<{ reservation_id: string }> {
    return this.#json(se, 'POST', '/api/v1/reservations', reservationSchema, { size_bytes: sizeBytes, ttl_ms: ttlMs });
  }

  /** `DELETE /api/v1/reservations/:id`; a 404/410 counts as released. */
  async releaseReservation(se: StorageElementConfig, reservationId: string): Promise<void> {
    await this.#json(se, 'DELETE', `/api/v1/reservations/${encodeURIComponent(reservationId)}`, undefined).catch(
      (error) => {
        if (!isStatus(error, 404) && !isStatus(error, 410)) throw error;
      },
    );
  }

  /** `POST /api/v1/uploads`: a resumable write of `size_bytes` against a reservation. */
  async createUpload(
    se: StorageElementConfig,
    body: { file_id: string; size_bytes: number; sha256: string; reservation_id: string; content_type?: string },
  ): Promise<{ upload_id: string }> {
    return this.#json(se, 'POST', '/api/v1/uploads', createdUploadSchema, body);
  }

  /** `HEAD /api/v1/uploads/:id` → the committed offset in bytes. */
  async uploadOffset(se: StorageElementConfig, uploadId: string): Promise<number> {
    const url = `${se.endpoint}/api/v1/uploads/${encodeURIComponent(uploadId)}`;
    const response = await this.#head(se, url);
    if (response.statusCode !== 200) throw statusError('HEAD', url, response.statusCode, undefined, undefined);
    const offset = Number(response.headers['upload-offset']);
    if (!Number.isSafeInteger(offset) || offset < 0) {
      throw new PolyvisionError('invalid_response', `HEAD ${url}: bad Upload-Offset`, { httpStatus: 502 });
    }
    return offset;
  }

  /**
   * `PATCH /api/v1/uploads/:id` streaming `body` from `offset` (never
   * buffered: undici pulls from the stream as the socket drains).
   *
   * @returns the new committed offset.
   * @throws InsufficientStorageError on 507 (`reservation_exceeded` or a full
   *   disk); PolyvisionError `http_rejected` with `details.peer_code`
   *   (`offset_mismatch`, `upload_expired`, `upload_not_found`) for 4xx;
   *   `http_unavailable`/`http_timeout` when the SE drops or stalls.
   */
  async append(
    se: StorageElementConfig,
    uploadId: string,
    offset: number,
    body: Readable,
    signal?: AbortSignal,
  ): Promise<number> {
    const url = `${se.endpoint}/api/v1/uploads/${encodeURIComponent(uploadId)}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${se.token}`,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
        },
        body,
        headersTimeout: this.#idleMs,
        bodyTimeout: this.#idleMs,
        ...(signal ? { signal } : {}),
        ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
      });
    } catch (error) {
      throw networkError(error, 'PATCH', url);
    }
    const text = await response.body.text().catch(() => '');
    if (response.statusCode === 204) {
      const next = Number(response.headers['upload-offset']);
      if (!Number.isSafeInteger(next)) throw new PolyvisionError('invalid_response', `PATCH ${url}: bad Upload-Offset`);
      return next;
    }
    const peer = parseJson(text);
    if (response.statusCode === 507) throw insufficient(se, peer);
    throw statusError('PATCH', url, response.statusCode, peer, undefined);
  }

  /**
   * `POST /api/v1/uploads/:id/complete {sha256}`: the SE checks size and
   * SHA-256 and publishes the file atomically. Idempotent.
   * @throws PolyvisionError `http_rejected` with `details.status` 422 and
   *   `peer_code: checksum_mismatch`, or 409 `upload_incomplete`.
   */
  async complete(
    se: StorageElementConfig,
    uploadId: string,
    sha256: string,
  ): Promise<{ file_id: string; size_bytes: number; sha256: string }> {
    return this.#json(se, 'POST', `/api/v1/uploads/${encodeURIComponent(uploadId)}/complete`, completedSchema, {
      sha256,
    });
  }

  /** `DELETE /api/v1/uploads/:id`: drops staged bytes and the reservation; 404/410 count as done. */
  async abort(se: StorageElementConfig, uploadId: string): Promise<void> {
    await this.#json(se, 'DELETE', `/api/v1/uploads/${encodeURIComponent(uploadId)}`, undefined).catch((error) => {
      if (!isStatus(error, 404) && !isStatus(error, 410)) throw error;
    });
  }

  /**
   * `GET /api/v1/files/:id`, from `startByte` on (`Range: bytes=<start>-`,
   * with `If-Range: <etag>` when given, so a changed file is sent whole).
   * The body is a stream the caller must consume or destroy; nothing is buffered.
   *
   * @returns `status` 200 (whole file: the SE ignored or could not honour the
   *   range) or 206 (from `startByte`), `totalBytes` (the whole file's size),
   *   `sha256` and `etag` as the SE reports them.
   * @throws PolyvisionError from the shared HTTP client mapping: `http_rejected`
   *   with `details.status` 404 (`peer_code: file_not_found`), 416, 401…;
   *   `http_unavailable`/`http_timeout` (retriable) for network faults and 5xx.
   */
  async openFile(
    se: StorageElementConfig,
    fileId: string,
    options: { startByte?: number; ifRange?: string; signal?: AbortSignal } = {},
  ): Promise<{
    status: 200 | 206;
    totalBytes: number;
    sha256: string | undefined;
    etag: string | undefined;
    body: Readable;
  }> {
    const url = `${se.endpoint}/api/v1/files/${encodeURIComponent(fileId)}`;
    const start = options.startByte ?? 0;
    const headers: Record<string, string> = { authorization: `Bearer ${se.token}` };
    if (start > 0) {
      headers.range = `bytes=${start}-`;
      if (options.ifRange) headers['if-range'] = options.ifRange;
    }
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'GET',
        headers,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#idleMs,
        ...(options.signal ? { signal: options.signal } : {}),
        ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
      });
    } catch (error) {
      throw networkError(error, 'GET', url);
    }
    const header = (name: string): string | undefined => {
      const value = response.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    if (response.statusCode !== 200 && response.statusCode !== 206) {
      const text = await response.body.text().catch(() => '');
      throw statusError('GET', url, response.statusCode, parseJson(text), header('retry-after'));
    }
    let totalBytes: number;
    if (response.statusCode === 206) {
      const match = /\/(\d+)$/.exec(header('content-range') ?? '');
      totalBytes = match ? Number(match[1]) : Number.NaN;
    } else {
      totalBytes = Number(header('content-length'));
    }
    if (!Number.isSafeInteger(totalBytes) || totalBytes < 0) {
      response.body.destroy();
      throw new PolyvisionError('invalid_response', `GET ${url}: no usable Content-Length/Content-Range`, {
        httpStatus: 502,
      });
    }
    return {
      status: response.statusCode,
      totalBytes,
      sha256: header('x-content-sha256'),
      etag: header('etag'),
      body: response.body,
    };
  }

  /**
   * `HEAD /api/v1/files/:id`: size and sha256 of a published file, or null when the SE has none (404).
   * @throws PolyvisionError for other answers and network faults (the shared client mapping).
   */
  async statFile(se: StorageElementConfig, fileId: string): Promise<{ sizeBytes: number; sha256: string } | null> {
    const url = `${se.endpoint}/api/v1/files/${encodeURIComponent(fileId)}`;
    const response = await this.#head(se, url);
    if (response.statusCode === 404) return null;
    if (response.statusCode !== 200) throw statusError('HEAD', url, response.statusCode, undefined, undefined);
    const sizeBytes = Number(response.headers['content-length']);
    const sha256 = response.headers['x-content-sha256'];
    if (!Number.isSafeInteger(sizeBytes) || typeof sha256 !== 'string') {
      throw new PolyvisionError('invalid_response', `HEAD ${url}: no Content-Length or X-Content-SHA256`, {
        httpStatus: 502,
      });
    }
    return { sizeBytes, sha256 };
  }

  /**
   * `DELETE /api/v1/files/:id` (the SE allows it only in `edit` mode).
   * @returns `deleted`, `absent` (404) or `not_allowed` (403 `delete_not_allowed`: mode `rw`, `ro` or `ar`).
   * @throws PolyvisionError for other answers and network faults.
   */
  async deleteFile(se: StorageElementConfig, fileId: string): Promise<'deleted' | 'absent' | 'not_allowed'> {
    try {
      await this.#json(se, 'DELETE', `/api/v1/files/${encodeURIComponent(fileId)}`, undefined);
      return 'deleted';
    } catch (error) {
      if (isStatus(error, 404)) return 'absent';
      if (isStatus(error, 403) && peerCode(error) === 'delete_not_allowed') return 'not_allowed';
      throw error;
    }
  }

  /** `HEAD url` with the SE's token; the (empty) body is drained. @throws PolyvisionError on network faults. */
  async #head(se: StorageElementConfig, url: string): Promise<Dispatcher.ResponseData> {
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, {
        method: 'HEAD',
        headers: { authorization: `Bearer ${se.token}` },
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
      });
    } catch (error) {
      throw networkError(error, 'HEAD', url);
    }
    await response.body.dump();
    return response;
  }

  async #json<T>(
    se: StorageElementConfig,
    method: string,
    path: string,
    schema: z.ZodType<T> | undefined,
    body?: unknown,
  ): Promise<T> {
    try {
      const response = await httpJsonResponse(`${se.endpoint}${path}`, {
        method,
        headers: { authorization: `Bearer ${se.token}` },
        ...(schema ? { schema } : {}),
        ...(body === undefined ? {} : { body }),
        timeoutMs: this.#timeoutMs,
        ...(this.#dispatcher ? { dispatcher: this.#dispatcher } : {}),
      });
      return response.body as T;
    } catch (error) {
      if (isStatus(error, 507)) {
        throw insufficient(se, (error as PolyvisionError).details.peer_body);
      }
      throw error;
    }
  }
}

/** Whether `error` is the HTTP client's error for an answer with `status`. */
export function isStatus(error: unknown, status: number): boolean {
  return error instanceof PolyvisionError && error.details.status === status;
}

/** The SE's error code of an HTTP client error, if any. */
export function peerCode(error: unknown): string | undefined {
  return error instanceof PolyvisionError && typeof error.details.peer_code === 'string'
    ? error.details.peer_code
    : undefined;
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}

function insufficient(se: StorageElementConfig, peer: unknown): InsufficientStorageError {
  const body = (peer && typeof peer === 'object' ? peer : {}) as Record<string, unknown>;
  const available = typeof body.available === 'number' ? body.available : undefined;
  const requested = typeof body.requested === 'number' ? body.requested : undefined;
  const code = typeof body.code === 'string' ? body.code : 'insufficient_storage';
  return new InsufficientStorageError(se.storage_id, `storage element ${se.storage_id} answered 507 ${code}`, {
    ...(available === undefined ? {} : { available }),
    ...(requested === undefined ? {} : { requested }),
    peer_code: code,
  });
}
