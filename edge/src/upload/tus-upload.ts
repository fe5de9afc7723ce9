/**
 * One attempt to upload one file with tus-js-client (tus 1.0.0: creation,
 * resumable PATCHes by offset). The caller owns retries: tus-js-client's own
 * retries are limited to quick reconnects on network errors and are
 * switched off (`onShouldRetry`) for every HTTP status the ingest answers
 * with, 507 included, because its default would retry 5xx at once, ignoring
 * `Retry-After`; the upload loop (uploader.ts) waits what the ingest asks.
 */
import { createReadStream } from 'node:fs';
import { PolyvisionError } from '@polyvision/shared';
import * as tus from 'tus-js-client';
import type { BandwidthLimiter } from './bandwidth-limiter.ts';
import { ingestError } from './ingest-errors.ts';

/** What one attempt needs. */
export interface TusAttempt {
  path: string;
  sizeBytes: number;
  /** `…/api/v1/uploads`. */
  endpoint: string;
  /** A stored upload URL to resume; null creates a new upload. */
  uploadUrl: string | null;
  token: string;
  metadata: Record<string, string>;
  chunkSizeBytes: number;
  limiter?: BandwidthLimiter | null;
  /** Called as soon as the server assigned the upload URL (store it durably). */
  onUploadUrl: (url: string) => void;
  /** Bytes of the file sent so far (the resumed offset included), for progress bars. */
  onProgress?: (bytesSent: number, bytesTotal: number) => void;
  /** A chunk the server acknowledged: its size in bytes (for upload rate and totals). */
  onChunkAcknowledged?: (chunkBytes: number) => void;
  signal?: AbortSignal;
}

/** What the ingest answered last. */
export interface TusOutcome {
  uploadUrl: string;
  /** Headers of the last response (the final PATCH, or the HEAD when the upload was already complete). */
  header(name: string): string | undefined;
}

/** Delays tus-js-client waits between its own reconnect tries on network errors, ms. */
const NETWORK_RETRY_DELAYS_MS = [0, 500, 1_500];

/**
 * Uploads (or resumes) one file.
 *
 * @throws PolyvisionError from {@link ingestError} (`ingest_insufficient_storage`,
 *   `ingest_unauthorized`, `ingest_unreachable`, …); `aborted` when `signal` fires
 *   (the upload is left resumable on the server, not terminated).
 */
export function tusUpload(attempt: TusAttempt): Promise<TusOutcome> {
  return new Promise<TusOutcome>((resolve, reject) => {
    if (attempt.signal?.aborted) {
      reject(new PolyvisionError('aborted', 'upload aborted', { cause: attempt.signal.reason }));
      return;
    }
    const limiter = attempt.limiter ?? null;
    const baseReader = tus.defaultOptions.fileReader;
    const fileReader = limiter
      ? {
          async openFile(input: unknown, chunkSize: number) {
            const source = await baseReader.openFile(input, chunkSize);
            return {
              size: source.size,
              async slice(start: number, end: number) {
                await limiter.take(Math.max(0, Math.min(end, source.size ?? end) - start), attempt.signal);
                return source.slice(start, end);
              },
              close: () => source.close(),
            };
          },
        }
      : baseReader;
    let settled = false;
    const upload = new tus.Upload(createReadStream(attempt.path), {
      endpoint: attempt.endpoint,
      uploadUrl: attempt.uploadUrl,
      uploadSize: attempt.sizeBytes,
      chunkSize: limiter ? limiter.chunkSizeBytes(attempt.chunkSizeBytes) : attempt.chunkSizeBytes,
      metadata: attempt.metadata,
      headers: { Authorization: `Bearer ${attempt.token}` },
      retryDelays: NETWORK_RETRY_DELAYS_MS,
      // Only network failures (no response) are retried here; every HTTP answer goes back to the loop.
      onShouldRetry: (error) => !(error as { originalResponse?: unknown }).originalResponse,
      storeFingerprintForResuming: false,
      removeFingerprintOnSuccess: false,
      fileReader: fileReader as typeof baseReader,
      onUploadUrlAvailable: () => {
        if (upload.url) attempt.onUploadUrl(upload.url);
      },
      onProgress: (sent, total) => attempt.onProgress?.(sent, total ?? attempt.sizeBytes),
      onChunkComplete: (chunkBytes) => attempt.onChunkAcknowledged?.(chunkBytes),
      onSuccess: ({ lastResponse }) => {
        if (settled) return;
        settled = true;
        attempt.signal?.removeEventListener('abort', onAbort);
        resolve({ uploadUrl: upload.url ?? '', header: (name) => lastResponse.getHeader(name) ?? undefined });
      },
      onError: (error) => {
        if (settled) return;
        settled = true;
        attempt.signal?.removeEventListener('abort', onAbort);
        reject(ingestError(error));
      },
    });
    const onAbort = () => {
      if (settled) return;
      settled = true;
      void upload.abort(false).catch(() => {});
      reject(new PolyvisionError('aborted', 'upload aborted', { cause: attempt.signal?.reason }));
    };
    attempt.signal?.addEventListener('abort', onAbort, { once: true });
    upload.start();
  });
}
