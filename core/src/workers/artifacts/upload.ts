import { createReadStream } from 'node:fs';
import { PolyvisionError, type RetryOptions, retry } from '@polyvision/shared';
import type { StorageElementConfig } from '../../capacity/index.ts';
import { InsufficientStorageError, isStatus, peerCode, type StorageElementClient } from '../../ingest/se-client.ts';

/** One file to write to an SE whose room is already reserved. */
export interface UploadRequest {
  fileId: string;
  localPath: string;
  sizeBytes: number;
  sha256: string;
  reservationId: string;
  contentType?: string;
  signal?: AbortSignal;
  /** Tries of the append loop (shared `retry()`); each resumes at the SE's committed offset. @defaultValue 5 attempts */
  retry?: Omit<RetryOptions, 'signal'>;
}

/**
 * Writes a local file to an SE with its resumable write protocol
 * (storage-element/README.md): `POST /uploads {file_id, size_bytes, sha256,
 * reservation_id}` → `PATCH` from the committed offset (streamed from disk;
 * after a broken try, `HEAD` gives the offset to go on from) →
 * `POST /uploads/:id/complete {sha256}` (the SE checks size and hash and
 * publishes atomically).
 *
 * @returns `uploaded` when this call published the file; `exists` when the SE
 *   already holds a published file with this id and sha256 (the reservation
 *   is released; nothing was written).
 * @throws InsufficientStorageError when the SE runs out of room mid-write (the
 *   upload is aborted: the caller places the file elsewhere);
 *   PolyvisionError `output_busy` (retriable) when a live upload of another
 *   writer holds the id; `output_conflict` (not retriable) when a published
 *   file with this id has other bytes; the SE client's errors otherwise (the
 *   upload is aborted and the reservation released).
 */
export async function uploadFile(
  client: StorageElementClient,
  se: StorageElementConfig,
  request: UploadRequest,
): Promise<'uploaded' | 'exists'> {
  let uploadId: string;
  try {
    uploadId = (
      await client.createUpload(se, {
        file_id: request.fileId,
        size_bytes: request.sizeBytes,
        sha256: request.sha256,
        reservation_id: request.reservationId,
        ...(request.contentType ? { content_type: request.contentType } : {}),
      })
    ).upload_id;
  } catch (error) {
    await client.releaseReservation(se, request.reservationId).catch(() => undefined);
    if (isStatus(error, 409) && peerCode(error) === 'file_exists') {
      const existing = await client.statFile(se, request.fileId);
      if (existing?.sha256 === request.sha256 && existing.sizeBytes === request.sizeBytes) return 'exists';
      if (existing) {
        throw new PolyvisionError(
          'output_conflict',
          `${se.storage_id} holds ${request.fileId} with sha256 ${existing.sha256}, not ${request.sha256}`,
          { retriable: false },
        );
      }
      throw new PolyvisionError(
        'output_busy',
        `${se.storage_id} has an open upload of ${request.fileId} (another run, or one that died; it expires with its reservation)`,
        { retriable: true, cause: error },
      );
    }
    throw error;
  }
  try {
    let offset = 0;
    await retry(
      async (attempt, signal) => {
        if (attempt > 1) offset = await client.uploadOffset(se, uploadId);
        while (offset < request.sizeBytes) {
          const body = createReadStream(request.localPath, { start: offset });
          try {
            offset = await client.append(se, uploadId, offset, body, signal);
          } finally {
            body.destroy();
          }
        }
      },
      {
        attempts: 5,
        baseDelayMs: 200,
        maxDelayMs: 5_000,
        ...request.retry,
        isRetriable: (error) =>
          !(error instanceof InsufficientStorageError) &&
          error instanceof PolyvisionError &&
          (error.retriable || peerCode(error) === 'offset_mismatch' || peerCode(error) === 'upload_busy'),
        ...(request.signal ? { signal: request.signal } : {}),
      },
    );
    await client.complete(se, uploadId, request.sha256);
    return 'uploaded';
  } catch (error) {
    await client.abort(se, uploadId).catch(() => undefined);
    await client.releaseReservation(se, request.reservationId).catch(() => undefined);
    throw error;
  }
}
