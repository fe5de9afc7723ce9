import type { Readable } from 'node:stream';
import { type Logger, PolyvisionError, silentLogger, uploadMetadataSchema } from '@polyvision/shared';
import { DataStore, ERRORS, Upload } from '@tus/utils';
import type { StorageElementConfig } from '../capacity/index.ts';
import type { Database } from '../db/index.ts';
import { recordCompletedUpload } from './catalog.ts';
import {
  type CapacityView,
  type Placement,
  type PlacementAttempt,
  type PlacementOptions,
  placeFile,
} from './placement.ts';
import type { OrganizationQuotas } from './quota.ts';
import { InsufficientStorageError, isStatus, peerCode, type StorageElementClient } from './se-client.ts';
import {
  claimExpiredUploads,
  endUpload,
  getUploadRow,
  insertUpload,
  relocateUpload,
  setUploadOffset,
  type UploadRow,
} from './upload-rows.ts';

/** A tus error answer (what tus-node-server expects thrown): status and body. */
export interface TusErrorAnswer {
  status_code: number;
  body: string;
}

/** Turns a PolyvisionError into a tus error answer with a JSON body `{code, message, ...details}`. */
export function tusError(error: PolyvisionError): TusErrorAnswer {
  return { status_code: error.httpStatus, body: JSON.stringify(error.toJSON()) };
}

/** Who created an upload (from the bearer token). */
export interface UploadOwner {
  token_id: string;
  edge_id: string | null;
}

/** Options of {@link StorageElementDataStore}. */
export interface StorageElementDataStoreOptions {
  db: Database;
  capacity: CapacityView;
  client: StorageElementClient;
  storageElements: readonly StorageElementConfig[];
  placement: Omit<PlacementOptions, 'reservationTtlMs'>;
  /** tus expiration: an upload not finished within this is gone (410), its reservation released. */
  uploadExpirationMs: number;
  /**
   * Lifetime of a reservation on its SE without progress, ms (the SE renews
   * it on every byte written). An upload silent for longer loses its bytes
   * there (410 on the next PATCH); a reservation stranded by a crash lapses.
   * @defaultValue 900_000 (15 minutes)
   */
  reservationTtlMs?: number;
  /** Per-organization quotas; omitted: none. */
  quotas?: OrganizationQuotas;
  /** Topic for `job.submit` (tests use a prefixed one). @defaultValue polyvision.jobs.commands */
  jobCommandsTopic?: string;
  /** Length of the edges' panorama segments, seconds (`INGEST_SEGMENT_DURATION_S`). @defaultValue 10 */
  segmentDurationS?: number;
  logger?: Logger;
  /** Owner of an upload id being created, set by the HTTP layer before tus calls `create`. */
  ownerOf?: (uploadId: string) => UploadOwner | undefined;
  /** Called after every placement (for `ingest_placements_total`): the attempts, and whether one succeeded. */
  onPlacement?: (attempts: readonly PlacementAttempt[], placed: boolean) => void;
  /**
   * Called once a finished upload is catalogued, awaited before the last
   * PATCH is answered: makes the file's further copies (replication), bounded
   * in time by the caller. Its errors are logged, never the upload's.
   */
  replicate?: (fileId: string) => Promise<unknown>;
}

/**
 * The tus `DataStore` of ingest: no bytes are kept here; each upload is a
 * resumable write on one storage element, chosen and reserved at creation.
 *
 * - `create`: validate metadata, place (reserve on an SE with 507 retry,
 *   placement.ts), create the SE upload with the expected SHA-256, insert
 *   the `uploads` row. Any replica can serve the next request: the row is in
 *   PostgreSQL and the offset is the SE's.
 * - `write`: stream the request body to the SE (`PATCH`), never buffering
 *   it. If the SE runs out of space mid-upload (507), the upload is moved
 *   to another SE and restarts at offset 0 (answer 503 `upload_relocated`;
 *   a tus client's HEAD then reads 0).
 * - `getUpload`: the offset comes from the SE; an upload whose bytes are
 *   all there but not yet recorded (a replica died in between) is finished now.
 * - {@link finish} (tus `onUploadFinish`): SE `complete` checks size and
 *   SHA-256 end to end, then catalog row + outbox `job.submit` in one
 *   transaction (catalog.ts), then the further copies (`replicate`,
 *   core/src/replication). A wrong checksum aborts the SE upload
 *   (reservation released) and answers 460.
 * - `remove` (termination) and `deleteExpired` (expiration) abort the SE
 *   upload, which releases its reservation.
 */
export class StorageElementDataStore extends DataStore {
  readonly #o: StorageElementDataStoreOptions;
  readonly #logger: Logger;

  constructor(options: StorageElementDataStoreOptions) {
    super();
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    this.extensions = ['creation', 'creation-with-upload', 'termination', 'expiration'];
  }

  override getExpiration(): number {
    return this.#o.uploadExpirationMs;
  }

  override async create(upload: Upload): Promise<Upload> {
    const parsed = uploadMetadataSchema.safeParse(upload.metadata ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw tusError(
        new PolyvisionError('invalid_metadata', `Upload-Metadata ${issue?.path.join('.')}: ${issue?.message}`, {
          httpStatus: 400,
        }),
      );
    }
    if (upload.size === undefined) {
      throw tusError(
        new PolyvisionError('upload_length_required', 'Upload-Length is required (no deferred length)', {
          httpStatus: 400,
        }),
      );
    }
    const meta = parsed.data;
    const size = upload.size;
    await this.#checkQuota(meta.organization_id, size);
    const placed = await this.#place(size, []);
    const fileId = fileIdFor(upload.id);
    let seUploadId: string;
    try {
      seUploadId = (
        await this.#o.client.createUpload(placed.se, {
          file_id: fileId,
          size_bytes: size,
          sha256: meta.sha256,
          reservation_id: placed.reservationId,
        })
      ).upload_id;
    } catch (error) {
      await this.#o.client.releaseReservation(placed.se, placed.reservationId).catch(() => undefined);
      throw tusError(asPolyvision(error, 'storage_unavailable', 503));
    }
    const owner = this.#o.ownerOf?.(upload.id);
    try {
      await insertUpload(this.#o.db, {
        upload_id: upload.id,
        organization_id: meta.organization_id,
        match_id: meta.match_id,
        kind: meta.kind,
        filename: meta.filename,
        size_bytes: size,
        sha256: meta.sha256,
        storage_id: placed.se.storage_id,
        file_id: fileId,
        se_upload_id: seUploadId,
        reservation_id: placed.reservationId,
        edge_id: owner?.edge_id ?? null,
        token_id: owner?.token_id ?? null,
        expiresInMs: this.#o.uploadExpirationMs,
      });
    } catch (error) {
      await this.#o.client.abort(placed.se, seUploadId).catch(() => undefined);
      await this.#o.client.releaseReservation(placed.se, placed.reservationId).catch(() => undefined);
      throw error;
    }
    // Concurrent creations may both have passed the first check: count again with this upload recorded.
    try {
      await this.#checkQuota(meta.organization_id, 0);
    } catch (error) {
      await endUpload(this.#o.db, upload.id, 'failed', { code: 'quota_exceeded' }).catch(() => undefined);
      await this.#o.client.abort(placed.se, seUploadId).catch(() => undefined);
      await this.#o.client.releaseReservation(placed.se, placed.reservationId).catch(() => undefined);
      throw error;
    }
    this.#logger.info(
      { upload_id: upload.id, storage_id: placed.se.storage_id, size_bytes: size, attempts: placed.attempts },
      'upload placed',
    );
    upload.creation_date = new Date().toISOString();
    upload.offset = 0;
    return upload;
  }

  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    const row = await this.#openRow(id);
    const se = this.#se(row.storage_id);
    let newOffset: number;
    try {
      newOffset = await this.#o.client.append(se, row.se_upload_id, offset, stream);
    } catch (error) {
      stream.resume();
      if (error instanceof InsufficientStorageError) {
        await this.#relocate(row, se);
        throw tusError(
          new PolyvisionError(
            'upload_relocated',
            `storage element ${se.storage_id} ran out of space; the upload moved to another storage element and restarts at offset 0 (HEAD for the offset)`,
            { httpStatus: 503, details: { retry_after_ms: 0 } },
          ),
        );
      }
      const code = peerCode(error);
      if (code === 'upload_expired' || code === 'upload_not_found' || code === 'reservation_expired') {
        await endUpload(this.#o.db, id, 'expired', { code });
        throw ERRORS.FILE_NO_LONGER_EXISTS;
      }
      if (code === 'offset_mismatch') throw ERRORS.INVALID_OFFSET;
      throw tusError(asPolyvision(error, 'storage_unavailable', 503));
    }
    await setUploadOffset(this.#o.db, id, newOffset).catch(() => undefined);
    return newOffset;
  }

  override async getUpload(id: string): Promise<Upload> {
    const row = await getUploadRow(this.#o.db, id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    const metadata = {
      organization_id: row.organization_id,
      match_id: row.match_id,
      kind: row.kind,
      filename: row.filename,
      sha256: row.sha256,
    };
    const base = { id, size: row.size_bytes, metadata, creation_date: row.created_at };
    if (row.status === 'completed') return new Upload({ ...base, offset: row.size_bytes });
    if (row.status !== 'receiving' || Date.parse(row.expires_at) < Date.now()) throw ERRORS.FILE_NO_LONGER_EXISTS;
    let offset: number;
    try {
      offset = await this.#o.client.uploadOffset(this.#se(row.storage_id), row.se_upload_id);
    } catch (error) {
      if (isStatus(error, 404) || isStatus(error, 410)) {
        await endUpload(this.#o.db, id, 'expired', { code: 'storage_upload_gone' });
        throw ERRORS.FILE_NO_LONGER_EXISTS;
      }
      throw tusError(asPolyvision(error, 'storage_unavailable', 503));
    }
    if (offset === row.size_bytes && row.size_bytes > 0) {
      // All bytes are on the SE but the upload was not recorded (the replica died in between): finish it now.
      await this.finish(id);
    }
    return new Upload({ ...base, offset });
  }

  override async remove(id: string): Promise<void> {
    const row = await getUploadRow(this.#o.db, id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.status !== 'receiving') throw ERRORS.FILE_NO_LONGER_EXISTS;
    await this.#discard(this.#se(row.storage_id), row, true);
    await endUpload(this.#o.db, id, 'terminated');
  }

  override async deleteExpired(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.#o.db.transaction(async (tx) => {
        const rows = await claimExpiredUploads(tx, 50);
        for (const row of rows) {
          const se = this.#o.storageElements.find((s) => s.storage_id === row.storage_id);
          if (se) await this.#discard(se, row).catch(() => undefined);
          await endUpload(tx, row.upload_id, 'expired', { code: 'upload_expired' });
        }
        return rows.length;
      });
      total += claimed;
      if (claimed < 50) return total;
    }
  }

  /**
   * Completes an upload whose bytes are all on its SE: SE `complete` with
   * the SHA-256 from the metadata (the SE hashes what it stored), then the
   * catalog transaction. Idempotent.
   *
   * @throws a tus answer 460 `checksum_mismatch` (SE upload aborted, row
   *   `failed`), 410 when the upload is gone, 503 when the SE cannot be reached.
   */
  async finish(id: string): Promise<void> {
    const row = await getUploadRow(this.#o.db, id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.status === 'completed') return;
    if (row.status !== 'receiving') throw ERRORS.FILE_NO_LONGER_EXISTS;
    const se = this.#se(row.storage_id);
    try {
      await this.#o.client.complete(se, row.se_upload_id, row.sha256);
    } catch (error) {
      if (peerCode(error) === 'checksum_mismatch') {
        const details = (error as PolyvisionError).details;
        const body = (details.peer_body ?? {}) as Record<string, unknown>;
        await this.#discard(se, row);
        await endUpload(this.#o.db, id, 'failed', { code: 'checksum_mismatch', actual: body.actual });
        throw tusError(
          new PolyvisionError(
            'checksum_mismatch',
            `the uploaded bytes hash to ${String(body.actual)}, not the sha256 ${row.sha256} given in Upload-Metadata; the upload is discarded`,
            { httpStatus: 460, details: { expected: row.sha256, actual: body.actual ?? null } },
          ),
        );
      }
      throw tusError(asPolyvision(error, 'storage_unavailable', 503));
    }
    await recordCompletedUpload(this.#o.db, row, {
      location: se.location,
      ...(this.#o.jobCommandsTopic ? { jobCommandsTopic: this.#o.jobCommandsTopic } : {}),
      ...(this.#o.segmentDurationS ? { segmentDurationS: this.#o.segmentDurationS } : {}),
    });
    await this.#o
      .replicate?.(row.file_id)
      .catch((error) =>
        this.#logger.warn(
          { err: error, file_id: row.file_id },
          'replication after upload failed; the repairer retries',
        ),
      );
  }

  /**
   * Drops an upload's bytes and its reservation on the SE. Both calls: an SE
   * may drop the upload on its own (after a checksum mismatch) yet keep the
   * reservation until it expires; releasing it explicitly frees the space now.
   */
  async #discard(se: StorageElementConfig, row: UploadRow, strict = false): Promise<void> {
    const abort = this.#o.client.abort(se, row.se_upload_id);
    if (strict) await abort;
    else await abort.catch(() => undefined);
    await this.#o.client.releaseReservation(se, row.reservation_id).catch((error) => {
      if (strict) throw error;
      this.#logger.warn({ err: error, storage_id: se.storage_id }, 'reservation release failed; it will expire');
    });
  }

  async #checkQuota(organizationId: string, addBytes: number): Promise<void> {
    if (!this.#o.quotas) return;
    try {
      await this.#o.quotas.check(this.#o.db, organizationId, addBytes);
    } catch (error) {
      if (error instanceof PolyvisionError && error.code === 'quota_exceeded') {
        this.#logger.info({ organization_id: organizationId, ...error.details }, 'upload refused: quota');
        throw tusError(error);
      }
      throw error;
    }
  }

  async #openRow(id: string): Promise<UploadRow> {
    const row = await getUploadRow(this.#o.db, id);
    if (!row) throw ERRORS.FILE_NOT_FOUND;
    if (row.status !== 'receiving') throw ERRORS.FILE_NO_LONGER_EXISTS;
    return row;
  }

  #se(storageId: string): StorageElementConfig {
    const se = this.#o.storageElements.find((s) => s.storage_id === storageId);
    if (!se) {
      throw tusError(
        new PolyvisionError('storage_unknown', `storage element ${storageId} is no longer configured`, {
          httpStatus: 503,
        }),
      );
    }
    return se;
  }

  async #place(sizeBytes: number, exclude: string[]): Promise<Placement> {
    try {
      const placed = await placeFile(
        {
          capacity: this.#o.capacity,
          reserver: this.#o.client,
          storageElements: this.#o.storageElements.filter((se) => !exclude.includes(se.storage_id)),
        },
        sizeBytes,
        { ...this.#o.placement, reservationTtlMs: this.#o.reservationTtlMs ?? 900_000 },
      );
      this.#o.onPlacement?.(placed.attempts, true);
      return placed;
    } catch (error) {
      const attempts = error instanceof PolyvisionError ? error.details.attempts : undefined;
      this.#o.onPlacement?.(Array.isArray(attempts) ? (attempts as PlacementAttempt[]) : [], false);
      throw tusError(asPolyvision(error, 'placement_failed', 503));
    }
  }

  /** The SE filled up under an open upload: drop it there, place it again elsewhere from offset 0. */
  async #relocate(row: UploadRow, from: StorageElementConfig): Promise<void> {
    await this.#discard(from, row).catch(() => undefined);
    void this.#o.capacity.triggerLazyUpdate(from.storage_id);
    let placed: Placement;
    try {
      placed = await this.#place(row.size_bytes, [from.storage_id]);
    } catch (error) {
      await endUpload(this.#o.db, row.upload_id, 'failed', { code: 'insufficient_storage' });
      throw error;
    }
    const fileId = fileIdFor(row.upload_id, row.relocations + 1);
    const created = await this.#o.client.createUpload(placed.se, {
      file_id: fileId,
      size_bytes: row.size_bytes,
      sha256: row.sha256,
      reservation_id: placed.reservationId,
    });
    await relocateUpload(this.#o.db, row.upload_id, {
      storage_id: placed.se.storage_id,
      se_upload_id: created.upload_id,
      reservation_id: placed.reservationId,
      file_id: fileId,
    });
    this.#logger.warn(
      { upload_id: row.upload_id, from: from.storage_id, to: placed.se.storage_id },
      'storage element full mid-upload: relocated',
    );
  }
}

/** The SE file id of an upload (and of its n-th relocation). */
export function fileIdFor(uploadId: string, relocation = 0): string {
  return relocation === 0 ? `f-${uploadId}` : `f-${uploadId}-r${relocation}`;
}

function asPolyvision(error: unknown, code: string, httpStatus: number): PolyvisionError {
  if (error instanceof PolyvisionError) {
    if (error.code === 'insufficient_storage' && error.httpStatus === 507) return error;
    return new PolyvisionError(error.code === 'insufficient_storage' ? code : error.code, error.message, {
      httpStatus: error.httpStatus >= 500 ? httpStatus : error.httpStatus,
      details: {},
      cause: error,
    });
  }
  if (error && typeof error === 'object' && 'status_code' in error) throw error;
  return new PolyvisionError(code, error instanceof Error ? error.message : String(error), {
    httpStatus,
    cause: error,
  });
}
