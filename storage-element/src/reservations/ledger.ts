import { seErrors } from '../errors.ts';
import { newId } from '../ids.ts';
import { outstandingBytes, type Reservation } from './reservation.ts';
import { SnapshotFile } from './snapshot-file.ts';

/** Options of {@link ReservationLedger.open}. */
export interface ReservationLedgerOptions {
  /** JSON snapshot file that keeps reservations across restarts. */
  stateFile: string;
  /** Clock, epoch ms. @defaultValue Date.now */
  now?: () => number;
  /** How many expired ids are remembered to answer `410` instead of `404`. @defaultValue 10_000 */
  tombstoneLimit?: number;
}

interface Snapshot {
  version: 1;
  reservations: Reservation[];
}

/**
 * The SE's book of reservations: bytes promised before any byte moves.
 *
 * Never oversubscribes: {@link reserve} checks and books in one synchronous
 * step on the event loop (the SE is one process), against the free bytes the
 * caller measured minus every byte still outstanding. Two concurrent
 * reservations of 60 % each on an empty SE → exactly one wins.
 *
 * Durable: every change is written to a snapshot file (atomic replace, see
 * {@link SnapshotFile}); `open` reloads it and drops what expired meanwhile.
 * Reservations live minutes, so a JSON snapshot of the live ones is small.
 */
export class ReservationLedger {
  readonly #byId = new Map<string, Reservation>();
  readonly #tombstones = new Map<string, number>();
  readonly #snapshot: SnapshotFile<Snapshot>;
  readonly #now: () => number;
  readonly #tombstoneLimit: number;
  #outstandingBytes = 0;

  private constructor(options: ReservationLedgerOptions) {
    this.#snapshot = new SnapshotFile(options.stateFile);
    this.#now = options.now ?? Date.now;
    this.#tombstoneLimit = options.tombstoneLimit ?? 10_000;
  }

  /**
   * Opens the ledger, loading surviving reservations from `stateFile`.
   * Reservations that expired while the SE was down are dropped (and
   * remembered as expired).
   *
   * @throws Error when the snapshot exists but is not valid JSON.
   */
  static async open(options: ReservationLedgerOptions): Promise<ReservationLedger> {
    const ledger = new ReservationLedger(options);
    const snapshot = await ledger.#snapshot.read();
    for (const r of snapshot?.reservations ?? []) {
      if (r.expiresAtMs <= ledger.#now()) ledger.#remember(r.reservationId);
      else ledger.#insert({ ...r });
    }
    return ledger;
  }

  /** Bytes promised to live reservations and not yet written. */
  get outstandingBytes(): number {
    return this.#outstandingBytes;
  }

  /** Number of live reservations. */
  get size(): number {
    return this.#byId.size;
  }

  /**
   * Books `sizeBytes` if it fits: `outstanding + sizeBytes ≤ freeBytes`.
   * Synchronous on purpose: no other booking can interleave.
   *
   * @param freeBytes - bytes the backend can still take, headroom already subtracted, reservations not.
   * @param ttlMs - lifetime without activity.
   * @throws PolyvisionError `insufficient_storage` (507) with `available` (free − outstanding) and `requested`.
   */
  reserve(sizeBytes: number, ttlMs: number, freeBytes: number): Reservation {
    this.sweep();
    const availableBytes = Math.max(0, freeBytes - this.#outstandingBytes);
    if (sizeBytes > availableBytes) throw seErrors.insufficientStorage(availableBytes, sizeBytes);
    const now = this.#now();
    const r: Reservation = {
      reservationId: newId('r'),
      sizeBytes,
      writtenBytes: 0,
      ttlMs,
      expiresAtMs: now + ttlMs,
      createdAtMs: now,
      uploadId: null,
    };
    this.#insert(r);
    return r;
  }

  /**
   * A live reservation.
   *
   * @throws PolyvisionError `reservation_not_found` (404) or `reservation_expired` (410).
   */
  get(reservationId: string): Reservation {
    const r = this.#byId.get(reservationId);
    if (r && r.expiresAtMs > this.#now()) return r;
    if (r) this.#expire(r);
    if (this.#tombstones.has(reservationId)) throw seErrors.reservationExpired(reservationId);
    throw seErrors.reservationNotFound(reservationId);
  }

  /** A live reservation or `undefined` (no errors). */
  find(reservationId: string): Reservation | undefined {
    const r = this.#byId.get(reservationId);
    return r && r.expiresAtMs > this.#now() ? r : undefined;
  }

  /**
   * Binds a free reservation to an upload of `sizeBytes`, giving back the
   * unneeded rest.
   *
   * @throws PolyvisionError `reservation_in_use` (409), `reservation_too_small` (409), or as {@link get}.
   */
  bind(reservationId: string, uploadId: string, sizeBytes: number): Reservation {
    const r = this.get(reservationId);
    if (r.uploadId !== null && r.uploadId !== uploadId) throw seErrors.reservationInUse(reservationId, r.uploadId);
    if (sizeBytes > r.sizeBytes) throw seErrors.reservationTooSmall(reservationId, r.sizeBytes, sizeBytes);
    this.#change(r, () => {
      r.uploadId = uploadId;
      r.sizeBytes = sizeBytes;
    });
    this.#renew(r);
    return r;
  }

  /** Unbinds a reservation from its upload (the upload was dropped); its written bytes go back to 0. */
  unbind(reservationId: string): void {
    const r = this.#byId.get(reservationId);
    if (!r) return;
    this.#change(r, () => {
      r.uploadId = null;
      r.writtenBytes = 0;
    });
  }

  /**
   * Records bytes written (positive) or discarded (negative) against a
   * reservation, so they count as used instead of reserved.
   */
  recordWritten(reservationId: string, deltaBytes: number): void {
    const r = this.#byId.get(reservationId);
    if (!r) return;
    this.#change(r, () => {
      r.writtenBytes = Math.max(0, r.writtenBytes + deltaBytes);
    });
  }

  /** Sets the bytes written against a reservation (recovery after a restart). */
  setWritten(reservationId: string, writtenBytes: number): void {
    const r = this.#byId.get(reservationId);
    if (!r) return;
    this.#change(r, () => {
      r.writtenBytes = writtenBytes;
    });
  }

  /** Extends a reservation to now + its ttl (activity). */
  renew(reservationId: string): void {
    const r = this.#byId.get(reservationId);
    if (r) this.#renew(r);
  }

  /** Removes a reservation (released by its holder or used up). Returns whether it existed. */
  release(reservationId: string): boolean {
    const r = this.#byId.get(reservationId);
    if (!r) return false;
    this.#remove(r);
    return true;
  }

  /** Removes every expired reservation and returns them (the caller drops their uploads). */
  sweep(): Reservation[] {
    const now = this.#now();
    const expired: Reservation[] = [];
    for (const r of this.#byId.values()) {
      if (r.expiresAtMs <= now) expired.push(r);
    }
    for (const r of expired) this.#expire(r);
    return expired;
  }

  /** All live reservations (copies). */
  list(): Reservation[] {
    return [...this.#byId.values()].map((r) => ({ ...r }));
  }

  /** Writes the current state durably; resolves when it is on disk. */
  persist(): Promise<void> {
    return this.#snapshot.write(() => ({ version: 1, reservations: [...this.#byId.values()] }));
  }

  #renew(r: Reservation): void {
    r.expiresAtMs = this.#now() + r.ttlMs;
  }

  #insert(r: Reservation): void {
    this.#byId.set(r.reservationId, r);
    this.#outstandingBytes += outstandingBytes(r);
  }

  #change(r: Reservation, mutate: () => void): void {
    this.#outstandingBytes -= outstandingBytes(r);
    mutate();
    this.#outstandingBytes += outstandingBytes(r);
  }

  #remove(r: Reservation): void {
    if (this.#byId.delete(r.reservationId)) this.#outstandingBytes -= outstandingBytes(r);
  }

  #expire(r: Reservation): void {
    this.#remove(r);
    this.#remember(r.reservationId);
  }

  #remember(reservationId: string): void {
    this.#tombstones.set(reservationId, this.#now());
    if (this.#tombstones.size > this.#tombstoneLimit) {
      const oldest = this.#tombstones.keys().next().value;
      if (oldest !== undefined) this.#tombstones.delete(oldest);
    }
  }
}
