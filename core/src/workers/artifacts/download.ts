import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PolyvisionError, type RetryOptions, retry } from '@polyvision/shared';
import type { StorageElementConfig } from '../../capacity/index.ts';
import type { StorageElementClient } from '../../ingest/se-client.ts';

/** Options of {@link downloadFile}. */
export interface DownloadOptions {
  /** Expected size in bytes (the ref's `size_bytes`). */
  sizeBytes: number;
  /** Expected SHA-256 (hex); the download fails when the bytes hash otherwise. */
  sha256?: string;
  signal?: AbortSignal;
  /** Tries, backoff (shared `retry()`); each retry resumes from the bytes on disk. @defaultValue 5 attempts, 200 ms base, 5 s cap */
  retry?: Omit<RetryOptions, 'signal'>;
  /** Called after every chunk written, with the bytes on disk so far (tests cut connections with it). */
  onBytes?: (bytesOnDisk: number) => void;
}

/** What {@link downloadFile} did. */
export interface DownloadResult {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** Bytes already on disk (a `.part` file of an earlier, broken try) when this call started. */
  resumedFromBytes: number;
  /** HTTP requests made (1 without a cut connection). */
  requests: number;
}

/**
 * Downloads SE file `fileId` to `path`, streaming (`GET /api/v1/files/:id`,
 * the socket's chunks go to disk as they come; memory stays flat).
 *
 * Bytes go to `<path>.part` first. A try that breaks mid-body (socket cut,
 * 5xx, timeout) is retried with shared `retry()` and resumes with
 * `Range: bytes=<bytes on disk>-` and `If-Range: <ETag>` (RFC 9110 §13.1.5,
 * §14.2): a changed file comes whole (200) and the part restarts. A `.part`
 * left by an earlier call (a killed worker) is resumed the same way. At the
 * end the size and SHA-256 (hashed on the way, seeded from the bytes already
 * on disk) are checked, then the part is renamed to `path`.
 *
 * @throws PolyvisionError `input_missing` (not retriable) when the SE has no
 *   such file (404); `input_checksum_mismatch` (not retriable, part removed)
 *   when size or SHA-256 differ; `input_unavailable` (retriable, last error
 *   as cause) when the SE cannot be reached or keeps failing; `aborted` when
 *   `signal` fires (the part stays, for a later resume).
 */
export async function downloadFile(
  client: StorageElementClient,
  se: StorageElementConfig,
  fileId: string,
  path: string,
  options: DownloadOptions,
): Promise<DownloadResult> {
  const part = `${path}.part`;
  await mkdir(dirname(path), { recursive: true });
  let onDisk = await stat(part).then(
    (s) => s.size,
    () => 0,
  );
  if (onDisk > options.sizeBytes) {
    await rm(part, { force: true });
    onDisk = 0;
  }
  const resumedFromBytes = onDisk;
  let hash = createHash('sha256');
  if (onDisk > 0) await pipeline(createReadStream(part, { end: onDisk - 1 }), hashSink(hash));
  let etag: string | undefined;
  let requests = 0;
  try {
    await retry(
      async (_attempt, signal) => {
        if (onDisk >= options.sizeBytes && options.sizeBytes > 0) return;
        requests++;
        const opened = await client.openFile(se, fileId, {
          startByte: onDisk,
          ...(etag ? { ifRange: etag } : {}),
          ...(signal ? { signal } : {}),
        });
        etag = opened.etag;
        if (opened.status === 200 && onDisk > 0) {
          // The SE sent the whole file (range ignored, or the file changed): start over.
          onDisk = 0;
          hash = createHash('sha256');
        }
        const handle = await open(part, onDisk === 0 ? 'w' : 'r+');
        try {
          for await (const chunk of opened.body as AsyncIterable<Buffer>) {
            await handle.write(chunk, 0, chunk.length, onDisk);
            hash.update(chunk);
            onDisk += chunk.length;
            options.onBytes?.(onDisk);
          }
        } catch (error) {
          opened.body.destroy();
          if (signal?.aborted) throw error;
          throw new PolyvisionError('http_unavailable', `GET ${fileId} from ${se.storage_id} broke mid-body`, {
            retriable: true,
            cause: error,
          });
        } finally {
          await handle.close();
        }
      },
      {
        attempts: 5,
        baseDelayMs: 200,
        maxDelayMs: 5_000,
        ...options.retry,
        ...(options.signal ? { signal: options.signal } : {}),
      },
    );
  } catch (error) {
    throw classify(error, se, fileId);
  }
  const sha256 = hash.digest('hex');
  if (onDisk !== options.sizeBytes || (options.sha256 && sha256 !== options.sha256)) {
    await rm(part, { force: true });
    throw new PolyvisionError(
      'input_checksum_mismatch',
      `${fileId} from ${se.storage_id}: got ${onDisk} bytes with sha256 ${sha256}, expected ${options.sizeBytes} bytes${
        options.sha256 ? ` with sha256 ${options.sha256}` : ''
      }`,
      { retriable: false, details: { storage_id: se.storage_id, file_id: fileId } },
    );
  }
  await rename(part, path);
  return { path, sizeBytes: onDisk, sha256, resumedFromBytes, requests };
}

function hashSink(hash: Hash): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      callback();
    },
  });
}

/** Maps a download failure onto the stage error codes. */
function classify(error: unknown, se: StorageElementConfig, fileId: string): PolyvisionError {
  if (error instanceof PolyvisionError && error.code === 'aborted') return error;
  const last = error instanceof PolyvisionError && error.code === 'retries_exhausted' ? error.cause : error;
  const status = last instanceof PolyvisionError ? last.details.status : undefined;
  const message = last instanceof Error ? last.message : String(last);
  if (status === 404) {
    return new PolyvisionError('input_missing', `${fileId} is not on ${se.storage_id}: ${message}`, {
      retriable: false,
      cause: error,
      details: { storage_id: se.storage_id, file_id: fileId },
    });
  }
  const retriable = !(last instanceof PolyvisionError) || last.retriable;
  return new PolyvisionError('input_unavailable', `cannot read ${fileId} from ${se.storage_id}: ${message}`, {
    retriable,
    cause: error,
    details: { storage_id: se.storage_id, file_id: fileId, ...(status === undefined ? {} : { status }) },
  });
}
