import { createHash, type Hash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, truncate, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PolyvisionError } from '@polyvision/shared';
import type { BlobBackend, FileMeta } from '../backends/blob-backend.ts';
import { seErrors } from '../errors.ts';
import { newId } from '../ids.ts';
import type { ReservationLedger } from '../reservations/ledger.ts';
import { fsyncDir } from '../reservations/snapshot-file.ts';
import { hashFilePrefix } from './hash-file.ts';
import type { UploadRecord, UploadView } from './upload-record.ts';

/** Options of {@link UploadStore.open}. */
export interface UploadStoreOptions {
  /** Staging folder: `<upload_id>.part` (bytes) and `<upload_id>.json` (record). */
  stagingDir: string;
  backend: BlobBackend;
  ledger: ReservationLedger;
  /** Clock, epoch ms. @defaultValue Date.now */
  now?: () => number;
  /** How long a completed upload is remembered for an idempotent `complete`, ms. @defaultValue 3_600_000 */
  completedRetentionMs?: number;
  /** Bytes gathered before one write to the staging file. @defaultValue 4 MiB */
  writeBatchBytes?: number;
  /** Bytes of a body beyond the upload's size read and dropped before the request is cut. @defaultValue 64 MiB */
  discardLimitBytes?: number;
  /** Observers for metrics: bytes written to staging. */
  onBytesWritten?: (bytes: number) => void;
  /** Called on an I/O error of the staging disk (health). */
  onIoError?: (error: unknown) => void;
  /** Logs background failures. */
  log?: (message: string, error: unknown) => void;
}

/** Input of {@link UploadStore.create}. */
export interface CreateUploadInput {
  fileId: string;
  sizeBytes: number;
  sha256: string | null;
  contentType: string;
  /** Existing reservation to bind; when absent, `reserve` is called. */
  reservationId: string | undefined;
  /** Books `sizeBytes` for an upload without a reservation (throws 507). */
  reserve: (sizeBytes: number) => Promise<string>;
}

interface Session {
  record: UploadRecord;
  offset: number;
  /** SHA-256 state over bytes [0, offset); undefined after a restart until needed. */
  hash: Hash | undefined;
  busy: boolean;
}

/** The errno code of a Node system error (not the code of a PolyvisionError). */
function errnoOf(error: unknown): string | undefined {
  if (error instanceof PolyvisionError) return undefined;
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Resumable uploads by offset, staged on local disk, published whole.
 *
 * - `create` binds the upload to a reservation (or makes one) and writes its
 *   record; the file id is claimed so no second upload can take it.
 * - `append` streams a body into `<id>.part` at the committed offset (batched
 *   positional writes), counting bytes against the upload's size; it fsyncs
 *   before answering so an acknowledged offset survives `kill -9`. A body
 *   that would pass the size, or a full disk, discards that request's bytes
 *   (truncate back). A client that disconnects keeps the bytes that arrived.
 * - `complete` checks size and sha256 and hands the fsynced file to the
 *   backend, which publishes it atomically.
 *
 * After a restart `open` reloads records, takes each offset from the staged
 * file's size and re-books the written bytes in the ledger.
 */
export class UploadStore {
  readonly #sessions = new Map<string, Session>();
  readonly #fileIds = new Map<string, string>();
  readonly #dir: string;
  readonly #backend: BlobBackend;
  readonly #ledger: ReservationLedger;
  readonly #now: () => number;
  readonly #retentionMs: number;
  readonly #batchBytes: number;
  readonly #discardLimitBytes: number;
  readonly #onBytesWritten: (bytes: number) => void;
  readonly #onIoError: (error: unknown) => void;
  readonly #log: (message: string, error: unknown) => void;
  #stagedBytes = 0;

  private constructor(options: UploadStoreOptions) {
    this.#dir = options.stagingDir;
    this.#backend = options.backend;
    this.#ledger = options.ledger;
    this.#now = options.now ?? Date.now;
    this.#retentionMs = options.completedRetentionMs ?? 3_600_000;
    this.#batchBytes = options.writeBatchBytes ?? 4 << 20;
    this.#discardLimitBytes = options.discardLimitBytes ?? 64 << 20;
    this.#onBytesWritten = options.onBytesWritten ?? (() => {});
    this.#onIoError = options.onIoError ?? (() => {});
    this.#log = options.log ?? (() => {});
  }

  /**
   * Opens the staging area and recovers uploads left by a previous run.
   * Uploads whose reservation expired meanwhile are dropped; orphan files are removed.
   */
  static async open(options: UploadStoreOptions): Promise<UploadStore> {
    const store = new UploadStore(options);
    await mkdir(store.#dir, { recursive: true });
    const names = await readdir(store.#dir);
    const records = names.filter((n) => n.endsWith('.json'));
    const known = new Set(records.map((n) => n.slice(0, -'.json'.length)));
    for (const name of names) {
      const orphanPart = name.endsWith('.part') && !known.has(name.slice(0, -'.part'.length));
      if (orphanPart || name.endsWith('.tmp')) await unlink(join(store.#dir, name)).catch(() => {});
    }
    for (const name of records) {
      let record: UploadRecord;
      try {
        record = JSON.parse(await readFile(join(store.#dir, name), 'utf8')) as UploadRecord;
      } catch (error) {
        store.#log(`dropping unreadable upload record ${name}`, error);
        await unlink(join(store.#dir, name)).catch(() => {});
        continue;
      }
      try {
        await store.#recover(record);
      } catch (error) {
        store.#log(`dropping upload ${record.uploadId}: it cannot be recovered`, error);
        store.#ledger.release(record.reservationId);
        await store.#removeFiles(record.uploadId);
      }
    }
    return store;
  }

  /** Bytes sitting in the staging area. */
  get stagedBytes(): number {
    return this.#stagedBytes;
  }

  /** Number of uploads still receiving bytes. */
  get openCount(): number {
    let n = 0;
    for (const s of this.#sessions.values()) if (s.record.state !== 'completed') n += 1;
    return n;
  }

  /**
   * Creates an upload.
   *
   * @throws PolyvisionError `file_exists` (409), reservation errors (404/409/410), `insufficient_storage` (507).
   */
  async create(input: CreateUploadInput): Promise<UploadView> {
    if (this.#fileIds.has(input.fileId) || (await this.#backend.stat(input.fileId))) {
      throw seErrors.fileExists(input.fileId);
    }
    const uploadId = newId('u');
    // Claim the file id and the reservation synchronously, before any await.
    if (this.#fileIds.has(input.fileId)) throw seErrors.fileExists(input.fileId);
    let reservationId = input.reservationId;
    if (reservationId !== undefined) {
      this.#ledger.bind(reservationId, uploadId, input.sizeBytes);
      this.#fileIds.set(input.fileId, uploadId);
    } else {
      this.#fileIds.set(input.fileId, uploadId);
      try {
        reservationId = await input.reserve(input.sizeBytes);
        this.#ledger.bind(reservationId, uploadId, input.sizeBytes);
      } catch (error) {
        this.#fileIds.delete(input.fileId);
        throw error;
      }
    }
    const record: UploadRecord = {
      uploadId,
      fileId: input.fileId,
      sizeBytes: input.sizeBytes,
      sha256: input.sha256,
      contentType: input.contentType,
      reservationId,
      createdAt: new Date(this.#now()).toISOString(),
      state: 'open',
    };
    const session: Session = { record, offset: 0, hash: createHash('sha256'), busy: false };
    this.#sessions.set(uploadId, session);
    try {
      const handle = await open(this.#partPath(uploadId), 'w');
      await handle.close();
      await this.#writeRecord(record);
      await this.#ledger.persist();
    } catch (error) {
      this.#forget(session, { releaseReservation: input.reservationId === undefined });
      await this.#removeFiles(uploadId);
      this.#onIoError(error);
      throw seErrors.storageFailure(`cannot create upload: ${(error as Error).message}`, error);
    }
    return this.#view(session);
  }

  /** An upload's state. @throws PolyvisionError `upload_not_found` (404), `upload_expired` (410). */
  get(uploadId: string): UploadView {
    return this.#view(this.#session(uploadId));
  }

  /**
   * Appends a stream at `offset`.
   *
   * @param contentLengthBytes - the request's `Content-Length`, when given (checked before reading).
   * @returns the new committed offset.
   * @throws PolyvisionError `offset_mismatch` (409), `upload_busy` (409), `reservation_exceeded` (507),
   *   `insufficient_storage` (507), `upload_incomplete`-free; a client disconnect is not an error (bytes kept).
   */
  async append(
    uploadId: string,
    offset: number,
    body: AsyncIterable<Uint8Array> | null,
    contentLengthBytes: number | undefined,
  ): Promise<number> {
    const session = this.#session(uploadId);
    if (session.record.state !== 'open') throw seErrors.offsetMismatch(session.offset, offset);
    if (session.busy) throw seErrors.uploadBusy(uploadId);
    if (offset !== session.offset) throw seErrors.offsetMismatch(session.offset, offset);
    const remaining = session.record.sizeBytes - session.offset;
    if (contentLengthBytes !== undefined && contentLengthBytes > remaining) {
      throw seErrors.reservationExceeded(remaining, contentLengthBytes);
    }
    if (body === null) return session.offset;
    session.busy = true;
    const { reservationId } = session.record;
    const startOffset = session.offset;
    const hash = session.hash?.copy();
    let written = 0;
    let received = 0;
    let handle: Awaited<ReturnType<typeof open>> | undefined;
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    let queuedBytes = 0;
    let inFlight: Promise<void> | undefined;
    /** Writes one batch at its position; hashes and books it once on disk. */
    const write = async (buffers: Uint8Array[], length: number, position: number) => {
      handle ??= await open(this.#partPath(uploadId), 'r+');
      let done = 0;
      while (done < length) {
        const { bytesWritten } = await handle.writev(
          done === 0 ? buffers : [Buffer.concat(buffers).subarray(done)],
          position + done,
        );
        done += bytesWritten;
      }
      for (const b of buffers) hash?.update(b);
      written += length;
      this.#stagedBytes += length;
      this.#ledger.recordWritten(reservationId, length);
      this.#ledger.renew(reservationId);
      this.#onBytesWritten(length);
    };
    /** Hands the gathered batch to the disk; at most one write is in flight while the next batch is read. */
    const flush = async () => {
      if (batchBytes === 0) return;
      const buffers = batch;
      const length = batchBytes;
      const position = startOffset + queuedBytes;
      queuedBytes += length;
      batch = [];
      batchBytes = 0;
      await inFlight;
      inFlight = write(buffers, length, position);
      inFlight.catch(() => {}); // observed by the next await; never an unhandled rejection
    };
    let disconnected = false;
    try {
      try {
        let refused: PolyvisionError | undefined;
        for await (const chunk of body) {
          received += chunk.byteLength;
          if (refused) {
            // Keep reading (and dropping) a refused body up to a cap, so the client can read the answer.
            if (received - remaining > this.#discardLimitBytes) throw refused;
            continue;
          }
          if (received > remaining) {
            refused = seErrors.reservationExceeded(remaining, received);
            continue;
          }
          batch.push(chunk);
          batchBytes += chunk.byteLength;
          if (batchBytes >= this.#batchBytes) await flush();
        }
        if (refused) throw seErrors.reservationExceeded(remaining, received);
      } catch (error) {
        if (!isClientAbort(error)) throw error;
        disconnected = true;
      }
      await flush();
      await inFlight;
      await handle?.sync();
      session.offset = startOffset + written;
      session.hash = hash;
      void this.#ledger.persist().catch((error) => this.#log('cannot persist reservations', error));
      return session.offset;
    } catch (error) {
      // Discard this request's bytes: the committed offset stays where it was.
      await inFlight?.catch(() => {});
      await handle?.truncate(startOffset).catch(() => {});
      await handle?.sync().catch(() => {});
      this.#stagedBytes -= written;
      this.#ledger.recordWritten(reservationId, -written);
      if (errnoOf(error) === 'ENOSPC' || errnoOf(error) === 'EDQUOT') {
        throw seErrors.insufficientStorage(0, remaining, 'the disk ran full while writing; the request was discarded');
      }
      if (errnoOf(error) !== undefined) {
        this.#onIoError(error);
        throw seErrors.storageFailure(`cannot write upload ${uploadId}: ${(error as Error).message}`, error);
      }
      throw error;
    } finally {
      await handle?.close().catch(() => {});
      session.busy = false;
      if (disconnected) this.#log(`client disconnected from upload ${uploadId} at offset ${session.offset}`, undefined);
    }
  }

  /**
   * Completes an upload: checks that all bytes arrived and the sha256, then
   * publishes it through the backend. Idempotent after success.
   *
   * @param sha256 - optional expected hash (in addition to the one given at creation).
   * @throws PolyvisionError `upload_incomplete` (409), `checksum_mismatch` (422; the upload is
   *   dropped, its reservation kept for a new upload), `file_exists` (409), `storage_failure` (503).
   */
  async complete(uploadId: string, sha256: string | null): Promise<FileMeta> {
    const session = this.#session(uploadId);
    const { record } = session;
    if (record.state === 'completed' && record.file) return record.file;
    if (session.busy) throw seErrors.uploadBusy(uploadId);
    if (session.offset < record.sizeBytes) throw seErrors.uploadIncomplete(session.offset, record.sizeBytes);
    session.busy = true;
    try {
      session.hash ??= await hashFilePrefix(this.#partPath(uploadId), session.offset);
      const actual = session.hash.copy().digest('hex');
      for (const expected of [record.sha256, sha256]) {
        if (expected !== null && expected !== actual) {
          this.#forget(session, { releaseReservation: false });
          await this.#removeFiles(uploadId);
          throw seErrors.checksumMismatch(expected, actual);
        }
      }
      const meta: FileMeta = {
        fileId: record.fileId,
        sizeBytes: record.sizeBytes,
        sha256: actual,
        contentType: record.contentType,
        createdAt: new Date(this.#now()).toISOString(),
      };
      record.state = 'publishing';
      record.file = meta;
      await this.#writeRecord(record);
      try {
        await this.#backend.publish(this.#partPath(uploadId), meta);
      } catch (error) {
        record.state = 'open';
        delete record.file;
        await this.#writeRecord(record).catch(() => {});
        throw error;
      }
      this.#stagedBytes -= record.sizeBytes;
      record.state = 'completed';
      record.completedAtMs = this.#now();
      this.#fileIds.delete(record.fileId);
      this.#ledger.release(record.reservationId);
      await this.#writeRecord(record);
      await this.#ledger.persist();
      return meta;
    } finally {
      session.busy = false;
    }
  }

  /**
   * Aborts an upload: staged bytes removed, reservation released.
   * @throws PolyvisionError `upload_busy` (409) while a request writes to it, or as {@link get}.
   */
  async abort(uploadId: string): Promise<void> {
    const session = this.#session(uploadId);
    if (session.busy) throw seErrors.uploadBusy(uploadId);
    if (session.record.state === 'completed') {
      this.#sessions.delete(uploadId);
      await this.#removeFiles(uploadId);
      return;
    }
    this.#forget(session, { releaseReservation: true });
    await this.#removeFiles(uploadId);
    await this.#ledger.persist();
  }

  /**
   * Drops uploads whose reservation is gone (expired or released) and
   * completed uploads past their retention. Returns the dropped upload ids.
   */
  async sweep(expiredReservationIds: Iterable<string>): Promise<string[]> {
    const expired = new Set(expiredReservationIds);
    const dropped: string[] = [];
    for (const session of [...this.#sessions.values()]) {
      const { record } = session;
      const stale =
        record.state === 'completed'
          ? this.#now() - (record.completedAtMs ?? 0) > this.#retentionMs
          : !session.busy &&
            record.state === 'open' &&
            (expired.has(record.reservationId) || this.#ledger.find(record.reservationId) === undefined);
      if (!stale) continue;
      if (record.state === 'completed') this.#sessions.delete(record.uploadId);
      else this.#forget(session, { releaseReservation: true });
      await this.#removeFiles(record.uploadId);
      dropped.push(record.uploadId);
    }
    return dropped;
  }

  /** Drops the upload bound to a reservation that its holder released. */
  async dropByReservation(reservationId: string): Promise<void> {
    for (const session of this.#sessions.values()) {
      if (session.record.reservationId === reservationId && session.record.state === 'open') {
        if (session.busy) throw seErrors.uploadBusy(session.record.uploadId);
        this.#forget(session, { releaseReservation: true });
        await this.#removeFiles(session.record.uploadId);
      }
    }
  }

  #session(uploadId: string): Session {
    const session = this.#sessions.get(uploadId);
    if (!session) throw seErrors.uploadNotFound(uploadId);
    if (session.record.state === 'open' && !session.busy && !this.#ledger.find(session.record.reservationId)) {
      this.#forget(session, { releaseReservation: true });
      void this.#removeFiles(uploadId);
      throw seErrors.uploadExpired(uploadId);
    }
    return session;
  }

  #view(session: Session): UploadView {
    const r = session.record;
    const reservation = this.#ledger.find(r.reservationId);
    return {
      upload_id: r.uploadId,
      file_id: r.fileId,
      size_bytes: r.sizeBytes,
      offset: session.offset,
      sha256: r.sha256,
      reservation_id: r.reservationId,
      expires_at: reservation ? new Date(reservation.expiresAtMs).toISOString() : null,
      state: r.state,
    };
  }

  /** Removes a session from memory and gives back its staged bytes (files are removed by the caller). */
  #forget(session: Session, { releaseReservation }: { releaseReservation: boolean }): void {
    const { record } = session;
    this.#sessions.delete(record.uploadId);
    if (this.#fileIds.get(record.fileId) === record.uploadId) this.#fileIds.delete(record.fileId);
    if (record.state !== 'completed') this.#stagedBytes -= session.offset;
    if (releaseReservation) this.#ledger.release(record.reservationId);
    else this.#ledger.unbind(record.reservationId);
  }

  async #recover(record: UploadRecord): Promise<void> {
    const part = this.#partPath(record.uploadId);
    if (record.state === 'completed') {
      if (this.#now() - (record.completedAtMs ?? 0) <= this.#retentionMs) {
        this.#sessions.set(record.uploadId, { record, offset: record.sizeBytes, hash: undefined, busy: false });
      } else {
        await this.#removeFiles(record.uploadId);
      }
      return;
    }
    if (record.state === 'publishing' && record.file) {
      const published = await this.#backend.stat(record.fileId);
      if (published && published.sha256 === record.file.sha256) {
        await unlink(part).catch(() => {});
        record.state = 'completed';
        record.completedAtMs = this.#now();
        this.#ledger.release(record.reservationId);
        await this.#writeRecord(record);
        this.#sessions.set(record.uploadId, { record, offset: record.sizeBytes, hash: undefined, busy: false });
        return;
      }
      record.state = 'open';
      delete record.file;
    }
    const reservation = this.#ledger.find(record.reservationId);
    let offset: number;
    try {
      offset = (await stat(part)).size;
    } catch {
      offset = -1;
    }
    if (!reservation || offset < 0) {
      this.#ledger.release(record.reservationId);
      await this.#removeFiles(record.uploadId);
      return;
    }
    if (offset > record.sizeBytes) {
      await truncate(part, record.sizeBytes);
      offset = record.sizeBytes;
    }
    this.#ledger.bind(record.reservationId, record.uploadId, record.sizeBytes);
    this.#ledger.setWritten(record.reservationId, offset);
    this.#stagedBytes += offset;
    this.#fileIds.set(record.fileId, record.uploadId);
    this.#sessions.set(record.uploadId, { record, offset, hash: undefined, busy: false });
  }

  #partPath(uploadId: string): string {
    return join(this.#dir, `${uploadId}.part`);
  }

  async #writeRecord(record: UploadRecord): Promise<void> {
    const path = join(this.#dir, `${record.uploadId}.json`);
    const handle = await open(`${path}.tmp`, 'w');
    try {
      await handle.writeFile(JSON.stringify(record), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(`${path}.tmp`, path);
    await fsyncDir(this.#dir);
  }

  async #removeFiles(uploadId: string): Promise<void> {
    await unlink(this.#partPath(uploadId)).catch(() => {});
    await unlink(join(this.#dir, `${uploadId}.json`)).catch(() => {});
  }
}

/** Whether a body-stream error means the client went away (not a server fault). */
function isClientAbort(error: unknown): boolean {
  const code = errnoOf(error);
  if (code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'EPIPE') return true;
  const message = error instanceof Error ? error.message : '';
  return (
    error instanceof Error && (error.name === 'AbortError' || message === 'aborted' || /premature close/i.test(message))
  );
}
