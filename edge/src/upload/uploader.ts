/**
 * The upload loop: takes segments from the spool (panoramas first, oldest
 * first), uploads each with tus (tus-upload.ts), resuming from the upload URL
 * stored in the journal, and hands the core's confirmation to the spool.
 *
 * Waiting rules:
 * - 507 (no storage element can take the file): wait the ingest's
 *   `Retry-After` (capped at `maxRetryAfterMs`), or the backoff when it sends
 *   none; alarm `ingest_insufficient_storage` while it lasts;
 * - ingest unreachable, 5xx, 429/503: capped exponential backoff with full
 *   jitter (shared/retry); alarm `ingest_unreachable` after 3 failures in a row;
 * - 401/403 (wrong token): alarm `ingest_unauthorized` (critical), retry
 *   every `unauthorizedRetryMs` (the token may be fixed on the core);
 * - other 4xx for a file: alarm `upload_rejected` for that file, which is set
 *   aside for `rejectedRetryMs` while the others go on;
 * - 404/410 on a stored upload URL: forget it and start a new upload.
 *
 * Confirmation: the core must report the file's sha256 in `X-Content-SHA256`
 * on the final response (or on a `HEAD` of the upload URL once complete);
 * the spool deletes the file only when it matches. Polyvision's ingest sends
 * it only once every copy of the file is verified (`Polyvision-Copies:
 * <verified>/<required>`); until then the file stays `unconfirmed` and is asked about again. With `confirmation:
 * 'tus_completion'`, a completed upload counts as confirmed (for an ingest
 * that checks the metadata's sha256 before it completes an upload).
 */
import {
  abortableSleep,
  backoffDelayMs,
  type Logger,
  PolyvisionError,
  silentLogger,
  UPLOAD_CONFIRMATION_HEADER,
  UPLOAD_COPIES_HEADER,
  type UploadMetadata,
} from '@polyvision/shared';
import type { Alarms } from '../alarms/index.ts';
import { type SegmentRow, type Spool, uploadFileName } from '../spool/index.ts';
import { BandwidthLimiter } from './bandwidth-limiter.ts';
import { tusUpload } from './tus-upload.ts';

/** The header in which the core reports the sha256 it stored (shared contract). */
export const CONFIRM_HEADER = UPLOAD_CONFIRMATION_HEADER;

/** Options of {@link Uploader}. */
export interface UploaderOptions {
  spool: Spool;
  alarms: Alarms;
  /** Ingest base URL (`https://core.example`); uploads go to `<url>/api/v1/uploads`. */
  ingestUrl: string;
  /** The edge's bearer token. */
  token: string;
  organizationId: string;
  /** tus chunk size, bytes. @defaultValue 8 MiB */
  chunkSizeBytes?: number;
  /** Bandwidth cap, bytes per second; 0 = none. @defaultValue 0 */
  bandwidthBytesPerSecond?: number;
  /** Backoff ceiling for the first retry, ms. @defaultValue 1_000 */
  baseDelayMs?: number;
  /** Backoff cap, ms. @defaultValue 60_000 */
  maxDelayMs?: number;
  /** Longest `Retry-After` honoured, ms. @defaultValue 300_000 */
  maxRetryAfterMs?: number;
  /** Retry interval while the token is refused, ms. @defaultValue 60_000 */
  unauthorizedRetryMs?: number;
  /** How long a rejected file is set aside, ms. @defaultValue 600_000 */
  rejectedRetryMs?: number;
  /**
   * What counts as the core's confirmation of a file's sha256:
   * `sha256_header` — the `X-Content-SHA256` header of the final response or
   * of a `HEAD` of the completed upload; `tus_completion` — a successful tus
   * completion, for an ingest that refuses to complete an upload whose bytes
   * do not hash to the `sha256` in its `Upload-Metadata` (Polyvision's ingest
   * answers 460 then); a header, when present, must still match.
   * @defaultValue 'sha256_header'
   */
  confirmation?: 'sha256_header' | 'tus_completion';
  /** How often uploads that completed without a confirmation are asked about again, ms. @defaultValue 60_000 */
  recheckUnconfirmedMs?: number;
  /** Called on progress of the current file. */
  onProgress?: (row: SegmentRow, bytesSent: number, bytesTotal: number) => void;
  logger?: Logger;
}

/** Upload figures for the status API. */
export interface UploaderStatus {
  state: 'idle' | 'uploading' | 'waiting';
  currentFile: string | null;
  /** Bytes acknowledged by the ingest since start. */
  bytesUploaded: number;
  /** Upload rate over the last ~10 s, bytes per second. */
  rateBytesPerSecond: number;
  filesConfirmed: number;
  insufficientStorageResponses: number;
  failures: number;
  waitingUntilMs: number | null;
  lastError: string | null;
}

export class Uploader {
  readonly #o: UploaderOptions;
  readonly #logger: Logger;
  readonly #limiter: BandwidthLimiter | null;
  readonly #setAside = new Map<number, number>();
  readonly #samples: Array<{ atMs: number; bytes: number }> = [];
  #status: UploaderStatus = {
    state: 'idle',
    currentFile: null,
    bytesUploaded: 0,
    rateBytesPerSecond: 0,
    filesConfirmed: 0,
    insufficientStorageResponses: 0,
    failures: 0,
    waitingUntilMs: null,
    lastError: null,
  };
  #wake: (() => void) | null = null;

  constructor(options: UploaderOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
    const cap = options.bandwidthBytesPerSecond ?? 0;
    this.#limiter = cap > 0 ? new BandwidthLimiter(cap) : null;
  }

  status(): UploaderStatus {
    const now = Date.now();
    while (this.#samples.length > 0 && now - (this.#samples[0]?.atMs ?? now) > 10_000) this.#samples.shift();
    const bytes = this.#samples.reduce((s, x) => s + x.bytes, 0);
    const spanMs = this.#samples.length > 0 ? Math.max(1_000, now - (this.#samples[0]?.atMs ?? now)) : 1_000;
    return { ...this.#status, rateBytesPerSecond: Math.round((bytes / spanMs) * 1000) };
  }

  /** Uploads until `signal` aborts; an upload in flight is left resumable. */
  async run(signal: AbortSignal): Promise<void> {
    const off = this.#o.spool.onAdded(() => this.#wake?.());
    let failures = 0;
    try {
      while (!signal.aborted) {
        const row = this.#next();
        if (!row) {
          this.#status.state = 'idle';
          await this.#recheckUnconfirmed();
          await this.#sleep(1_000, signal);
          continue;
        }
        const waitMs = await this.#attempt(row, signal, failures);
        if (signal.aborted) break;
        if (waitMs === 0) {
          failures = 0;
          continue;
        }
        failures++;
        this.#status.state = 'waiting';
        this.#status.waitingUntilMs = Date.now() + waitMs;
        await abortableSleep(waitMs, signal).catch(() => {});
        this.#status.waitingUntilMs = null;
      }
    } finally {
      off();
      this.#status.state = 'idle';
    }
  }

  /**
   * Uploads everything waiting now, then resolves (for the CLI's `--drain` and tests).
   * With `untilConfirmed`, it then also waits until the core has confirmed
   * every uploaded file (all its copies verified: the core sends
   * `X-Content-SHA256` only then), asking again every `recheckIntervalMs`
   * (default 1 s); the spool keeps each file until it is confirmed.
   */
  async drain(
    signal: AbortSignal,
    options: { untilConfirmed?: boolean; recheckIntervalMs?: number } = {},
  ): Promise<void> {
    const inner = new AbortController();
    const stop = () => inner.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    const loop = this.run(inner.signal);
    while (!signal.aborted && this.#o.spool.waiting().length > 0) {
      await new Promise((r) => setTimeout(r, 100));
    }
    inner.abort();
    signal.removeEventListener('abort', stop);
    await loop;
    while (options.untilConfirmed && !signal.aborted && this.#o.spool.journal.list(['unconfirmed']).length > 0) {
      await this.#recheckUnconfirmed(true);
      if (this.#o.spool.journal.list(['unconfirmed']).length === 0) break;
      await abortableSleep(options.recheckIntervalMs ?? 1_000, signal).catch(() => {});
    }
  }

  /**
   * While idle, at most every `recheckUnconfirmedMs` (or now when `force`):
   * asks the ingest again (`HEAD` of the upload URL) for the sha256 of
   * uploads that completed without a confirmation, and confirms those that now match.
   */
  async #recheckUnconfirmed(force = false): Promise<void> {
    const every = this.#o.recheckUnconfirmedMs ?? 60_000;
    if (!force && Date.now() - this.#lastRecheckMs < every) return;
    this.#lastRecheckMs = Date.now();
    for (const row of this.#o.spool.journal.list(['unconfirmed'])) {
      if (!row.uploadUrl) continue;
      const sha = await this.#headSha(row.uploadUrl, row.sizeBytes);
      if (sha && (await this.#o.spool.confirm(row.id, sha))) this.#status.filesConfirmed++;
    }
  }

  #lastRecheckMs = 0;

  #next(): SegmentRow | undefined {
    const now = Date.now();
    return this.#o.spool.waiting().find((r) => (this.#setAside.get(r.id) ?? 0) <= now);
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const onAbort = () => done();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#wake = done;
      function done() {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve();
      }
    });
    this.#wake = null;
  }

  /** One attempt; returns how long to wait before the next (0: go on at once). */
  async #attempt(row: SegmentRow, signal: AbortSignal, failures: number): Promise<number> {
    const o = this.#o;
    const metadata: UploadMetadata = {
      organization_id: o.organizationId,
      match_id: row.matchId,
      kind: row.kind,
      filename: uploadFileName(row),
      sha256: row.sha256,
    };
    this.#status.state = 'uploading';
    this.#status.currentFile = row.fileName;
    try {
      const outcome = await tusUpload({
        path: o.spool.pathOf(row),
        sizeBytes: row.sizeBytes,
        endpoint: `${o.ingestUrl.replace(/\/+$/, '')}/api/v1/uploads`,
        uploadUrl: row.uploadUrl,
        token: o.token,
        metadata,
        chunkSizeBytes: o.chunkSizeBytes ?? 8 * 1024 * 1024,
        limiter: this.#limiter,
        signal,
        onUploadUrl: (url) => o.spool.journal.setUploadUrl(row.id, url),
        onProgress: (sent, total) => o.onProgress?.(row, sent, total),
        onChunkAcknowledged: (bytes) => this.#count(bytes),
      });
      const header = outcome.header(CONFIRM_HEADER);
      // `Polyvision-Copies: 1/2`: stored, but not every copy is verified yet; no mode confirms that.
      const copiesPending = copiesShort(outcome.header(UPLOAD_COPIES_HEADER));
      const sha =
        header ??
        (copiesPending
          ? null
          : o.confirmation === 'tus_completion'
            ? row.sha256
            : await this.#headSha(outcome.uploadUrl, row.sizeBytes));
      if (sha) {
        if (await o.spool.confirm(row.id, sha)) this.#status.filesConfirmed++;
      } else {
        o.spool.markUnconfirmed(
          row.id,
          copiesPending
            ? `the ingest has not verified every copy yet (${UPLOAD_COPIES_HEADER}: ${outcome.header(UPLOAD_COPIES_HEADER)})`
            : `the ingest did not report the sha256 (${CONFIRM_HEADER})`,
        );
      }
      for (const code of ['ingest_insufficient_storage', 'ingest_unreachable', 'ingest_unauthorized'])
        o.alarms.clear(code);
      o.alarms.clear('upload_rejected', row.fileName);
      this.#status.lastError = null;
      this.#logger.info({ file: row.fileName, size_bytes: row.sizeBytes, confirmed: Boolean(sha) }, 'segment uploaded');
      return 0;
    } catch (error) {
      if (signal.aborted) return 0;
      const e = error instanceof PolyvisionError ? error : new PolyvisionError('upload_failed', String(error));
      o.spool.journal.recordAttempt(row.id, e.message);
      this.#status.failures++;
      this.#status.lastError = e.message;
      const backoff = Math.max(
        100,
        backoffDelayMs(failures, {
          baseDelayMs: o.baseDelayMs ?? 1_000,
          maxDelayMs: o.maxDelayMs ?? 60_000,
          factor: 2,
          jitter: 'full',
        }),
      );
      const retryAfter = typeof e.details?.retry_after_ms === 'number' ? e.details.retry_after_ms : null;
      this.#logger.warn({ file: row.fileName, code: e.code, retry_after_ms: retryAfter }, e.message);
      switch (e.code) {
        case 'ingest_insufficient_storage':
          this.#status.insufficientStorageResponses++;
          o.alarms.raise('ingest_insufficient_storage', 'ingest', e.message, {
            details: { retry_after_ms: retryAfter },
          });
          return retryAfter === null ? backoff : Math.min(o.maxRetryAfterMs ?? 300_000, Math.max(retryAfter, 100));
        case 'ingest_busy':
          return retryAfter === null ? backoff : Math.min(o.maxRetryAfterMs ?? 300_000, Math.max(retryAfter, 100));
        case 'ingest_unauthorized':
          o.alarms.raise('ingest_unauthorized', 'ingest', e.message, { severity: 'critical' });
          return o.unauthorizedRetryMs ?? 60_000;
        case 'ingest_upload_gone':
          o.spool.journal.clearUploadUrl(row.id);
          return 100;
        case 'ingest_rejected':
          o.alarms.raise('upload_rejected', row.fileName, e.message, { severity: 'critical' });
          this.#setAside.set(row.id, Date.now() + (o.rejectedRetryMs ?? 600_000));
          return 100;
        default:
          if (failures + 1 >= 3) o.alarms.raise('ingest_unreachable', 'ingest', e.message, { severity: 'critical' });
          return backoff;
      }
    } finally {
      this.#status.currentFile = null;
    }
  }

  /** `HEAD` of a completed upload: the sha256 header when the upload is whole, else null. */
  async #headSha(uploadUrl: string, sizeBytes: number): Promise<string | null> {
    try {
      const response = await fetch(uploadUrl, {
        method: 'HEAD',
        headers: { 'Tus-Resumable': '1.0.0', Authorization: `Bearer ${this.#o.token}` },
        signal: AbortSignal.timeout(10_000),
      });
      if (!response.ok || Number(response.headers.get('Upload-Offset')) !== sizeBytes) return null;
      return response.headers.get(CONFIRM_HEADER);
    } catch {
      return null;
    }
  }

  #count(bytes: number): void {
    this.#status.bytesUploaded += bytes;
    this.#samples.push({ atMs: Date.now(), bytes });
  }
}

/** Whether a `Polyvision-Copies: <verified>/<required>` value says copies are still missing (absent: no). */
export function copiesShort(value: string | null | undefined): boolean {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(value ?? '');
  return match ? Number(match[1]) < Number(match[2]) : false;
}
